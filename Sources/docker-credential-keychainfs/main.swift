import Glibc
import KeychainCredentialHelpers

exit(DockerCredentialHelper.main(CommandLine.arguments))
