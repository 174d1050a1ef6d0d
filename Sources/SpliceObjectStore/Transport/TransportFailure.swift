/// Why a transfer produced no HTTP answer: libcurl's error code and message.
struct TransportFailure: Error, Sendable {
    enum Kind: Sendable {
        /// Connecting, resolving, TLS, a reset or truncated transfer: another attempt may pass.
        case connection
        /// No byte moved for the stall timeout, or no connection within the connect timeout.
        case timeout
        /// The caller cancelled the transfer.
        case cancelled
        /// A mistake no retry fixes (malformed URL, unsupported protocol, bad TLS certificate).
        case permanent
    }

    var kind: Kind
    /// CURLcode's value.
    var curlCode: Int
    /// libcurl's own explanation (its error buffer, else curl_easy_strerror).
    var message: String
}
