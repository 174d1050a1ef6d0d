/// Takes a response body as it arrives, on the transfer thread. It may block (the transfer then
/// waits, and TCP slows the sender down); returning false aborts the transfer.
protocol ResponseSink: AnyObject, Sendable {
    /// Takes the next bytes of the body; false to stop the transfer.
    func accept(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// How many body bytes it has taken so far (a request that delivered some is not retried).
    var delivered: Int64 { get }
}
