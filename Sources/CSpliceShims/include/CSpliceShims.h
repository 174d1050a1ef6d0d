// Umbrella header for CSpliceShims: the C macros and inline helpers Swift cannot import directly.
// Every symbol is prefixed `splice_` and carries a comment saying why it exists.
#ifndef SPLICE_SHIMS_H
#define SPLICE_SHIMS_H
#include "splice_ffmpeg.h"
#include "splice_zmq.h"
#include "splice_pq.h"
#include "splice_process.h"
#include "splice_file.h"
#endif
