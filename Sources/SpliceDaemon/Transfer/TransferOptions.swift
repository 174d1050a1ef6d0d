/// How a ``TransferPort`` paces and bounds its transfers.
public struct TransferOptions: Sendable, Hashable {
    /// Bytes per FETCH / CHUNK (1 MiB; at most `WireLimits.chunkBytes`).
    public var chunkBytes = 1 << 20
    /// Bytes one transfer may have asked for and not yet received (16 MiB; the issue allows up to
    /// 64): the receiver's memory bound, and with it every queue on the way, since a sender only
    /// sends what was asked for. 16 MiB keeps loopback and LAN transfers at full speed (a 10 ms
    /// round trip still allows 1.6 GB/s) with a quarter of the memory (`splice-bench transfer`).
    public var maxInFlightBytes = 16 << 20
    /// A transfer with nothing received for this long asks again for everything in flight (after
    /// a reconnection, say): it resumes by chunk.
    public var stallTimeout: Duration = .seconds(5)
    /// Stalls in a row before the transfer fails (retryably).
    public var maxStalls = 6

    public init() {}

    /// Chunks in flight at once: the window `maxInFlightBytes` allows (at least one).
    var credit: Int { max(1, maxInFlightBytes / max(1, chunkBytes)) }
}
