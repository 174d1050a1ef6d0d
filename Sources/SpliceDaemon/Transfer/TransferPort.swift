public import Foundation
internal import SpliceConcurrency
public import SpliceCore
public import SpliceLog
public import SpliceWire

/// One side of the data endpoint (`splice-data` 1): it serves the files it offers to whoever asks
/// (FETCH → CHUNK or MISSING) and fetches files from a peer, zguide-style, with a credit of
/// chunks in flight, into a ``PartialFile`` that is verified (size, SHA-256) before it is moved
/// into place. The coordinator and every transfer-mode worker run one; it does not care which
/// socket type it sits on (the coordinator's ROUTER fetches results from workers' DEALERs the
/// same way workers fetch excerpts from it).
public actor TransferPort {
    /// What a finished fetch moved.
    public struct Report: Sendable, Hashable {
        public var bytes: Int64
        public var elapsed: Duration
        /// Megabytes (10^6 bytes) per second, for logs and benchmarks.
        public var megabytesPerSecond: Double {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return seconds > 0 ? Double(bytes) / 1e6 / seconds : 0
        }
    }

    private enum Arrival: Sendable {
        case chunk(Chunk, Data, from: WirePeer)
        case missing(Missing, from: WirePeer)
        case tick
    }

    private let endpoint: DataEndpoint
    private let options: TransferOptions
    private let logger: Logger
    /// Files offered: where each is, and the only key that may fetch it (nil: whoever asks).
    private var offers: [TransferFileID: (path: String, key: CurvePublicKey?)] = [:]
    private var inbox: [TransferFileID: AsyncStream<Arrival>.Continuation] = [:]
    /// Payload bytes received into fetches and sent to peers.
    public private(set) var bytesIn: Int64 = 0
    public private(set) var bytesOut: Int64 = 0
    /// The same per peer (a worker, on the coordinator's side): its key, else its routing id.
    private var bytesByPeer: [WorkerIdentity: (received: Int64, sent: Int64)] = [:]

    /// Payload bytes received from and sent to the peer `identity` names, since this port started.
    public func bytes(of identity: WorkerIdentity) -> (received: Int64, sent: Int64) {
        bytesByPeer[identity] ?? (0, 0)
    }

    private func count(received: Int64 = 0, sent: Int64 = 0, peer: WirePeer) {
        bytesIn += received
        bytesOut += sent
        guard let identity = WorkerIdentity(peer: peer) else { return }
        let total = bytesByPeer[identity] ?? (0, 0)
        bytesByPeer[identity] = (total.received + received, total.sent + sent)
    }

    public init(endpoint: DataEndpoint, options: TransferOptions = TransferOptions(), logger: Logger) {
        self.endpoint = endpoint
        self.options = options
        self.logger = logger
    }

    // MARK: - Serving

    /// Offers the file at `path` as `file` until ``withdraw(_:)``: to the peer with `key` only (on
    /// a CURVE server, the worker an excerpt was assigned to), or to whoever asks when nil.
    public func offer(_ file: TransferFileID, path: String, to key: CurvePublicKey? = nil) {
        offers[file] = (path, key)
    }

    public func withdraw(_ file: TransferFileID) {
        offers[file] = nil
    }

    /// Receives until the endpoint closes or the task is cancelled: answers FETCHes (in order,
    /// one chunk read and sent at a time, so a peer's requests cannot make this side buffer more
    /// than a chunk) and hands CHUNKs and MISSINGs to the fetch waiting for them. Refused
    /// messages (garbage, wrong protocol, a CHUNK whose payload is not its length) are counted
    /// and logged; nothing a peer sends stops the loop. On a DEALER (a worker's side) it also
    /// introduces this side after every handshake (``introduceOnEveryConnection()``).
    public func run() async {
        let introductions = endpoint.wire.type == .dealer ? Task { await introduceOnEveryConnection() } : nil
        defer { introductions?.cancel() }
        while !Task.isCancelled {
            let batch = await endpoint.receive(upTo: 64)
            if batch.isEmpty { break }
            for received in batch {
                switch received {
                case .message(.fetch(let fetch), _, let peer):
                    await serve(fetch, to: peer)
                case .message(.chunk(let chunk), let payload, let peer):
                    inbox[chunk.file]?.yield(.chunk(chunk, payload ?? Data(), from: peer))
                case .message(.missing(let missing), _, let peer):
                    inbox[missing.file]?.yield(.missing(missing, from: peer))
                case .rejected(let rejection, let peer) where rejection.reason == .probation:
                    // A joining worker's introduction, sent before its JOIN enrolled its key.
                    logger.debug("refused a message on the data endpoint", [
                        "peer": peer.description, "reason": rejection.reason.rawValue, "detail": rejection.detail,
                    ])
                case .rejected(let rejection, let peer):
                    logger.warning("refused a message on the data endpoint", [
                        "peer": peer.description, "reason": rejection.reason.rawValue, "detail": rejection.detail,
                    ])
                }
            }
        }
    }

    // MARK: - Introducing

    /// The file a DEALER's introduction asks for: offered by no one, so every peer answers
    /// MISSING, which no fetch waits for.
    static let introduction = TransferFileID("introduction")!

    /// Sends an introduction after each handshake of this side's DEALER: the first connection and
    /// every reconnection (a restarted coordinator, a dropped connection).
    ///
    /// A CURVE ROUTER (the coordinator's data endpoint) learns which key a route belongs to only
    /// from a message received on it, and refuses to send on a route it has not heard from. A
    /// worker speaks on the data endpoint only to fetch an excerpt, so a coordinator that
    /// restarted (or dropped the route) while a segment was running could not ask for its result
    /// until the worker's next ASSIGN: every FETCH failed as an unknown peer and the fetch
    /// stalled out. The introduction is a FETCH, which any peer speaking `splice-data` 1 answers.
    private func introduceOnEveryConnection() async {
        for await event in endpoint.wire.events where event.kind == .handshakeSucceeded {
            await introduce()
        }
    }

    private func introduce() async {
        // With ZMQ_IMMEDIATE a send can fail until the socket has attached the connection the
        // handshake event announced: tried again for a little while.
        for attempt in 1...20 {
            do {
                let session = Int.random(in: WireLimits.transferSession)
                try await endpoint.send(.fetch(Fetch(file: Self.introduction, offset: 0, length: 1, session: session)))
                return
            } catch {
                if attempt == 20 {
                    logger.debug("could not introduce this side on the data endpoint", ["error": error.message])
                    return
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    private func serve(_ fetch: Fetch, to peer: WirePeer) async {
        // Another worker's file is answered as if it did not exist: its name gives nothing away.
        guard let (path, key) = offers[fetch.file], key == nil || key == peer.publicKey else {
            try? await endpoint.send(.missing(Missing(file: fetch.file, reason: "not offered (withdrawn or never offered)",
                                                      session: fetch.session)), to: peer)
            return
        }
        switch await TransferFiles.read(path, offset: fetch.offset, length: fetch.length) {
        case .success(let (bytes, size)):
            let chunk = Chunk(file: fetch.file, offset: fetch.offset, length: bytes.count, fileSize: size,
                              session: fetch.session)
            do {
                try await endpoint.send(.chunk(chunk), payload: bytes, to: peer)
                count(sent: Int64(bytes.count), peer: peer)
            } catch {
                // The requester is gone or cut off; it asks again once it is back.
                logger.debug("could not send a chunk", ["file": fetch.file.rawValue, "peer": peer.description,
                                                        "error": error.message])
            }
        case .failure(let failure):
            logger.warning("cannot serve a file", ["file": fetch.file.rawValue, "path": path, "reason": failure.reason])
            try? await endpoint.send(.missing(Missing(file: fetch.file, reason: failure.reason, session: fetch.session)),
                                     to: peer)
        }
    }

    // MARK: - Fetching

    /// Fetches `file` (`size` bytes, `checksum`) from `source` into `destination`: written beside
    /// it under a temporary name, checked, then renamed into place. Nothing is left at (or
    /// beside) the destination when it throws. A peer that goes away and comes back within the
    /// stall budget is asked again for what was in flight; the transfer resumes by chunk.
    public func fetch(_ file: TransferFileID, size: Int64, checksum: SHA256Digest, from source: WirePeer,
                      to destination: URL) async throws(TransferError) -> Report {
        guard inbox[file] == nil else {
            throw TransferError(.busy, "\(file) is already being fetched", isRetryable: true)
        }
        let clock = ContinuousClock()
        let started = clock.now
        let (arrivals, continuation) = AsyncStream.makeStream(of: Arrival.self)
        inbox[file] = continuation
        let stallTimeout = options.stallTimeout
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: stallTimeout / 4)
                continuation.yield(.tick)
            }
        }
        defer {
            ticker.cancel()
            inbox[file] = nil
            continuation.finish()
        }
        let partial = try await PartialFile.create(destination: destination)
        var window = ChunkWindow(size: size, chunkBytes: min(options.chunkBytes, WireLimits.chunkBytes.upperBound),
                                 credit: options.credit)
        var lastProgress = clock.now
        var stalls = 0
        let session = Int.random(in: WireLimits.transferSession)
        await request(window.requests(), of: file, session: session, from: source)
        continuation.yield(.tick)  // so an empty file, complete at once, ends the loop at its first turn
        receiving: for await arrival in arrivals {
            if window.isComplete { break receiving }
            switch arrival {
            case .chunk(let chunk, let bytes, let peer):
                // Another enrolled peer cannot feed (or, below, end) this transfer: ignored and logged.
                // Answers to an earlier fetch of the same file (abandoned) are not this one's.
                guard chunk.session == session else { continue }
                guard source.publicKey == nil || peer.publicKey == source.publicKey else {
                    logger.warning("ignored a chunk from another peer", ["file": file.rawValue, "peer": peer.description,
                                                                        "expected": source.description])
                    continue
                }
                switch window.check(offset: chunk.offset, length: chunk.length, fileSize: chunk.fileSize) {
                case .duplicate:
                    continue
                case .invalid(let why):
                    throw TransferError(.invalidChunk, "\(file) from \(source): \(why)")
                case .accept:
                    try await partial.write(bytes, at: chunk.offset)
                    window.received(offset: chunk.offset)
                    count(received: Int64(bytes.count), peer: peer)
                    lastProgress = clock.now
                    stalls = 0
                    if window.isComplete { break receiving }
                    await request(window.requests(), of: file, session: session, from: source)
                }
            case .missing(let missing, let peer):
                guard missing.session == session, source.publicKey == nil || peer.publicKey == source.publicKey else {
                    continue
                }
                let reason = missing.reason
                throw TransferError(.missing, "\(source) cannot send \(file): \(reason)", isRetryable: true)
            case .tick:
                guard clock.now - lastProgress > stallTimeout else { continue }
                stalls += 1
                if stalls > options.maxStalls {
                    throw TransferError(.stalled, "nothing of \(file) arrived from \(source) for \(stallTimeout * stalls); "
                                        + "the transfer is given up (and retried elsewhere)", isRetryable: true)
                }
                logger.info("transfer stalled; asking again", ["file": file.rawValue, "peer": source.description,
                                                               "received": window.receivedBytes, "stalls": stalls])
                lastProgress = clock.now
                await request(window.resend(), of: file, session: session, from: source)
            }
        }
        guard window.isComplete else {
            throw TransferError(.cancelled, "the fetch of \(file) was cancelled", isRetryable: true)
        }
        try await partial.commit(size: size, checksum: checksum)
        let report = Report(bytes: size, elapsed: clock.now - started)
        logger.info("file received", ["file": file.rawValue, "peer": source.description, "bytes": size,
                                      "mb_per_s": Int(report.megabytesPerSecond.rounded()),
                                      "ms": report.elapsed.wholeMilliseconds])
        return report
    }

    /// Sends FETCHes; one that cannot go out now (the peer is cut off) is asked again after a stall.
    private func request(_ ranges: [ChunkWindow.Range], of file: TransferFileID, session: Int,
                         from source: WirePeer) async {
        for range in ranges {
            do {
                try await endpoint.send(.fetch(Fetch(file: file, offset: range.offset, length: range.length,
                                                     session: session)), to: source)
            } catch {
                logger.debug("could not ask for a chunk", ["file": file.rawValue, "peer": source.description,
                                                           "error": error.message])
                return
            }
        }
    }
}
