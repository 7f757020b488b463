import KeychainCredentialHelpers
import KeychainSystem

CurrentProcess.exit(GitCredentialHelper.main(CommandLine.arguments))
