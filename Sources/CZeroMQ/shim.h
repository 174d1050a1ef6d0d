// The libzmq header. Only includes: macros Swift cannot import live in CZeroMQShims.
#ifndef SPLICE_CZEROMQ_SHIM_H
#define SPLICE_CZEROMQ_SHIM_H
#include <zmq.h>
#endif
