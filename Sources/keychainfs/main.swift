import KeychainCLI
import KeychainSystem

CurrentProcess.exit(CLI.main(CommandLine.arguments))
