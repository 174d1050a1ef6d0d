#if canImport(Glibc)
import Glibc
#endif

/// Why an HTTP server could not start: a stable code, the `errno` when a system call said so,
/// and a message naming the address and what to do.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Another process listens there.
        case addressInUse = "address-in-use"
        /// A port below 1024 without the privilege, or an address this machine does not have.
        case cannotBind = "cannot-bind"
        /// A socket, thread or pipe could not be made.
        case system
    }

    public var code: Code
    public var errno: Int32?
    public var message: String

    init(_ code: Code, errno: Int32? = nil, _ message: String) {
        self.code = code
        self.errno = errno
        self.message = message
    }

    /// `bind` failed on `address`.
    static func bind(_ address: HTTPAddress, errno number: Int32) -> HTTPServerError {
        if number == EADDRINUSE {
            return HTTPServerError(.addressInUse, errno: number,
                                   "\(address) is in use by another process; give another port, or `off`")
        }
        return HTTPServerError(.cannotBind, errno: number,
                               "cannot listen on \(address): \(String(cString: strerror(number)))")
    }

    public var description: String { message }
}
