#if canImport(Glibc)
import Glibc
#endif

exit(await CommandRunner.main(root: SpliceCommand.self))
