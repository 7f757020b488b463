import Glibc
import KeychainCredentialHelpers

exit(GitCredentialHelper.main(CommandLine.arguments))
