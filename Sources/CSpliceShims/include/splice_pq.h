// libpq helpers. libpq's API is plain functions that Swift imports directly; this header exists
// for the few things that are not.
#ifndef SPLICE_PQ_H
#define SPLICE_PQ_H
#include <postgresql/libpq-fe.h>
#endif
