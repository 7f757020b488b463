import KeychainCredentialHelpers
import KeychainSystem

CurrentProcess.exit(DockerCredentialHelper.main(CommandLine.arguments))
