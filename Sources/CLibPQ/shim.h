// The libpq header, at its fixed Debian location under /usr/include/postgresql.
#ifndef SPLICE_CLIBPQ_SHIM_H
#define SPLICE_CLIBPQ_SHIM_H
#include <postgresql/libpq-fe.h>
#endif
