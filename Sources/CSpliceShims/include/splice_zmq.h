// libzmq helpers. libzmq's constants are plain integer macros that Swift imports directly;
// this header exists for the few things that are not.
#ifndef SPLICE_ZMQ_H
#define SPLICE_ZMQ_H
#include <zmq.h>
#endif
