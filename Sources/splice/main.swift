#if canImport(Glibc)
import Glibc
#endif

// A write to a pipe whose reader is gone (a media-task child that died, `splice jobs | head`) is an
// error to handle (EPIPE), not a reason for the whole process to die.
signal(SIGPIPE, SIG_IGN)
exit(await CommandRunner.main(root: SpliceCommand.self))
