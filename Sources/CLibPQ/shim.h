// The libpq header, at its fixed Debian location under /usr/include/postgresql. Only includes: what
// Swift cannot import lives in CLibPQShims.
#ifndef SPLICE_CLIBPQ_SHIM_H
#define SPLICE_CLIBPQ_SHIM_H
#include <postgresql/libpq-fe.h>
#endif
