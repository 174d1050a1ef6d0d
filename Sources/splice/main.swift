#if canImport(Glibc)
import Glibc
#endif
import CSpliceSystem

// A write to a pipe whose reader is gone (a media-task child that died, `splice jobs | head`) is an
// error to handle (EPIPE), not a reason for the whole process to die.
signal(SIGPIPE, SIG_IGN)

// Every segment opens its own decoders and encoder and frees them at its end, and the next segment
// asks for the same megabytes again. glibc's defaults hand freed memory above a few megabytes back
// to the kernel, so the next segment's first touch of every page faults and the kernel zeroes it
// again (2 MiB at a time with transparent huge pages): 5 % of the CPU of a 1080p x264 job in 2 s
// segments (docs/media.md, Scaling). Blocks up to 32 MiB (a 4K 16-bit picture) come from the heap
// and up to 128 MiB of free memory stays with it for reuse.
_ = splice_keep_freed_memory(32 << 20, 128 << 20)
exit(await CommandRunner.main(root: SpliceCommand.self))
