// CLibPQShims: the libpq values Swift cannot import. libpq's API is plain functions that Swift
// imports directly; this header exists for the few things that are not. Depends on CLibPQ only.
// Every symbol is prefixed `splice_` and carries a comment saying why it exists.
#ifndef SPLICE_CLIBPQSHIMS_H
#define SPLICE_CLIBPQSHIMS_H
#include <postgresql/libpq-fe.h>

/// The PG_DIAG_* error-field codes are character-literal macros ('C', 'M', …), which Swift does
/// not import; PQresultErrorField needs them to read the SQLSTATE and message of an error.
static inline int splice_PG_DIAG_SQLSTATE(void) { return PG_DIAG_SQLSTATE; }
static inline int splice_PG_DIAG_MESSAGE_PRIMARY(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int splice_PG_DIAG_MESSAGE_DETAIL(void) { return PG_DIAG_MESSAGE_DETAIL; }
static inline int splice_PG_DIAG_CONSTRAINT_NAME(void) { return PG_DIAG_CONSTRAINT_NAME; }
#endif
