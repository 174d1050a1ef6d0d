// CZeroMQShims: the libzmq values Swift cannot import. libzmq's constants are plain integer macros
// that Swift imports directly; this header exists for the few that are not. Depends on CZeroMQ
// only. Every symbol is prefixed `splice_` and carries a comment saying why it exists.
#ifndef SPLICE_CZEROMQSHIMS_H
#define SPLICE_CZEROMQSHIMS_H
#include <zmq.h>

/// ZMQ_ZAP_ENFORCE_DOMAIN is declared in zmq.h only under ZMQ_BUILD_DRAFT_API, so Swift cannot
/// see it, yet libzmq 4.3.4 accepts the option in stable builds too (Debian's libzmq5 is built
/// without drafts and, with it set, refuses CURVE clients when no ZAP handler is bound — checked
/// by SpliceWireIntegrationTests). Without it a missing handler lets every client in.
static inline int splice_ZMQ_ZAP_ENFORCE_DOMAIN(void) {
#ifdef ZMQ_ZAP_ENFORCE_DOMAIN
    return ZMQ_ZAP_ENFORCE_DOMAIN;
#else
    return 93;
#endif
}

/// ETERM is defined as `(ZMQ_HAUSNUMERO + 53)`, an expression Swift does not import.
static inline int splice_ZMQ_ETERM(void) { return ETERM; }

/// The zmq_msg_gets property holding the user id a ZAP handler returned for the peer. Its macro
/// (ZMQ_MSG_PROPERTY_USER_ID) is DRAFT-only; the property itself is stable since libzmq 4.1.
static inline const char *splice_ZMQ_MSG_PROPERTY_USER_ID(void) { return "User-Id"; }
#endif
