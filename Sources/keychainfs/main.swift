import Glibc
import KeychainCLI

exit(CLI.main(CommandLine.arguments))
