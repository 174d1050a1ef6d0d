import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceLog
import SpliceMedia
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceCoordinator
import SpliceDaemon

/// Both ends of a data endpoint as the cluster runs them: the coordinator's ROUTER (CURVE server,
/// a ZAP handler admitting the worker's key) and a worker's DEALER (CURVE client, routing id
/// `w:` + its key), each with a ``TransferPort``.
private struct DataLink {
    let context: WireContext
    let zap: ZAPHandler
    let serverKeys: CurveKeyPair
    let workerKeys: CurveKeyPair
    var router: DataEndpoint
    let dealer: DataEndpoint
    var coordinator: TransferPort
    let worker: TransferPort
    var tasks: [Task<Void, Never>]

    /// Other enrolled workers' keys (enrolled, not connected).
    let otherKeys: [CurveKeyPair]

    /// `immediate`: the DEALER's ZMQ_IMMEDIATE, on as a worker's is (sends fail while it has no
    /// connection) or off (they wait for one).
    static func start(options: TransferOptions, alsoEnrolled otherKeys: [CurveKeyPair] = [],
                      immediate: Bool = false) async throws -> DataLink {
        let context = try WireContext()
        let serverKeys = try CurveKeyPair.generate(), workerKeys = try CurveKeyPair.generate()
        let zap = try await ZAPHandler.start(context: context,
                                             authorizer: EnrolledKeys([workerKeys.publicKey] + otherKeys.map(\.publicKey)))
        let router = DataEndpoint(try await WireEndpoint.bind(["tcp://127.0.0.1:*"], type: .router, context: context,
                                                              options: .router(curve: .server(keys: serverKeys))))
        let dealer = DataEndpoint(try await WireEndpoint.connect(
            router.wire.endpoints[0], type: .dealer, context: context,
            options: .dealer(routingID: RoutingID("w:" + workerKeys.publicKey.z85),
                             curve: .client(keys: workerKeys, serverKey: serverKeys.publicKey), immediate: immediate)))
        let coordinator = TransferPort(endpoint: router, options: options, logger: testLogger)
        let worker = TransferPort(endpoint: dealer, options: options, logger: testLogger)
        let tasks = [Task { await coordinator.run() }, Task { await worker.run() }]
        return DataLink(context: context, zap: zap, serverKeys: serverKeys, workerKeys: workerKeys, router: router,
                        dealer: dealer, coordinator: coordinator, worker: worker, tasks: tasks, otherKeys: otherKeys)
    }

    /// The worker as the coordinator's side addresses it: its routing id and authenticated key.
    var workerRoute: WirePeer {
        WirePeer(routingID: RoutingID("w:" + workerKeys.publicKey.z85), publicKey: workerKeys.publicKey)
    }

    func stop() async {
        for task in tasks { task.cancel() }
        await dealer.close(linger: .zero)
        await router.close(linger: .zero)
        await zap.close()
        await context.terminate()
    }
}

/// `count` random bytes in a new file in `dir`, and their SHA-256 (by `sha256sum`, the oracle).
private func randomFile(_ dir: URL, _ name: String, bytes count: Int) async throws -> (URL, SHA256Digest) {
    // On a thread of its own: tens of millions of byte stores take seconds in a debug build, which
    // must not hold a thread of the cooperative pool the transfers' own deadlines run on.
    let bytes = await ExternalTool.computeOffPool { () -> [UInt8] in
        var generator = SplitMix64(seed: UInt64(count))
        var bytes = [UInt8](repeating: 0, count: count)
        for i in stride(from: 0, to: count, by: 8) {
            let word = generator.next()
            for j in 0..<min(8, count - i) { bytes[i + j] = UInt8(truncatingIfNeeded: word >> (8 * j)) }
        }
        return bytes
    }
    let url = dir.appendingPathComponent(name)
    try Data(bytes).write(to: url)
    let sum = try await ExternalTool.check("sha256sum", [url.path]).text.prefix(64)
    return (url, try #require(SHA256Digest("sha256:" + sum)))
}

/// Files in `dir` whose names say they are unfinished.
private func leftovers(_ dir: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".partial") }
}

@Suite("Transfers on the data endpoint", .timeLimit(.minutes(4)))
struct TransferPortTests {
    static let small: TransferOptions = {
        var options = TransferOptions()
        options.chunkBytes = 64 << 10
        options.maxInFlightBytes = 256 << 10
        // Short enough for the reconnection test, long enough that a loaded machine (the whole
        // suite at once on two cores) does not stall a healthy transfer.
        options.stallTimeout = .seconds(1)
        options.maxStalls = 20
        return options
    }()

    @Test("an excerpt goes down and a result comes back over CURVE, chunk by chunk, verified before it is moved into place")
    func bothWays() async throws {
        let dir = Fixtures.temporaryDirectory("transfer")
        let link = try await DataLink.start(options: Self.small)
        let (excerpt, excerptSum) = try await randomFile(dir, "excerpt.splseg", bytes: 5_000_001)
        let excerptID = try #require(TransferFileID("excerpt-7c1e9d2a.0"))
        await link.coordinator.offer(excerptID, path: excerpt.path)
        let downloaded = dir.appendingPathComponent("scratch-excerpt.splseg")
        let down = try await link.worker.fetch(excerptID, size: 5_000_001, checksum: excerptSum, from: .upstream, to: downloaded)
        #expect(down.bytes == 5_000_001)
        #expect(try Data(contentsOf: downloaded) == Data(contentsOf: excerpt))

        // The result: the worker offers it, and the coordinator fetches it from the worker's route
        // (its routing id and key), knowing size and SHA-256 from the COMPLETE, as the daemons do.
        let (result, resultSum) = try await randomFile(dir, "result.splseg", bytes: 1_234_567)
        let resultID = try #require(TransferFileID("result-7c1e9d2a"))
        await link.worker.offer(resultID, path: result.path)
        let spooled = dir.appendingPathComponent("segment-00003.a1-7c1e9d2a.splseg")
        _ = try await link.coordinator.fetch(resultID, size: 1_234_567, checksum: resultSum, from: link.workerRoute,
                                             to: spooled)
        #expect(try Data(contentsOf: spooled) == Data(contentsOf: result))
        #expect(try leftovers(dir).isEmpty)
        // Received bytes count each chunk once; a sender may have sent one twice after a stall.
        let (workerIn, workerOut) = (await link.worker.bytesIn, await link.worker.bytesOut)
        let (coordinatorIn, coordinatorOut) = (await link.coordinator.bytesIn, await link.coordinator.bytesOut)
        #expect(workerIn == 5_000_001 && workerOut >= 1_234_567)
        #expect(coordinatorOut >= 5_000_001 && coordinatorIn == 1_234_567)
        await link.stop()
    }

    @Test("a damaged chunk: the checksum refuses the file, nothing is left at the destination")
    func damagedChunk() async throws {
        let dir = Fixtures.temporaryDirectory("transfer-damaged")
        let link = try await DataLink.start(options: Self.small)
        let (file, sum) = try await randomFile(dir, "excerpt.splseg", bytes: 700_000)
        let id = try #require(TransferFileID("damaged"))
        await link.coordinator.offer(id, path: file.path)
        // Damage the offered file after its checksum was taken: every chunk the sender reads now
        // carries one flipped byte where the receiver cannot see it but SHA-256 can.
        var bytes = try Data(contentsOf: file)
        bytes[350_000] ^= 0x01
        try bytes.write(to: file)
        let destination = dir.appendingPathComponent("received.splseg")
        let error = await #expect(throws: TransferError.self) {
            _ = try await link.worker.fetch(id, size: 700_000, checksum: sum, from: .upstream, to: destination)
        }
        #expect(error?.code == .checksumMismatch)
        #expect(error?.isRetryable == true)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(try leftovers(dir).isEmpty)
        await link.stop()
    }

    @Test("a file that is not offered, or gone from disk, fails retryably with the reason")
    func missing() async throws {
        let dir = Fixtures.temporaryDirectory("transfer-missing")
        let link = try await DataLink.start(options: Self.small)
        let id = try #require(TransferFileID("gone"))
        let sum = try #require(SHA256Digest("sha256:" + String(repeating: "0", count: 64)))
        let destination = dir.appendingPathComponent("received.splseg")
        let notOffered = await #expect(throws: TransferError.self) {
            _ = try await link.worker.fetch(id, size: 10, checksum: sum, from: .upstream, to: destination)
        }
        #expect(notOffered?.code == .missing && notOffered?.message.contains("not offered") == true)
        await link.coordinator.offer(id, path: dir.appendingPathComponent("deleted.splseg").path)
        let deleted = await #expect(throws: TransferError.self) {
            _ = try await link.worker.fetch(id, size: 10, checksum: sum, from: .upstream, to: destination)
        }
        #expect(deleted?.code == .missing && deleted?.message.contains("No such file") == true)
        #expect(deleted?.isRetryable == true)
        #expect(try leftovers(dir).isEmpty && !FileManager.default.fileExists(atPath: destination.path))
        await link.stop()
    }

    @Test("a file offered to one worker's key is MISSING to any other enrolled worker")
    func offeredToOneKey() async throws {
        let dir = Fixtures.temporaryDirectory("transfer-key")
        let link = try await DataLink.start(options: Self.small, alsoEnrolled: [try CurveKeyPair.generate()])
        let (file, sum) = try await randomFile(dir, "excerpt.splseg", bytes: 100_000)
        let id = try #require(TransferFileID("for-the-other-worker"))
        await link.coordinator.offer(id, path: file.path, to: link.otherKeys[0].publicKey)
        let refused = await #expect(throws: TransferError.self) {
            _ = try await link.worker.fetch(id, size: 100_000, checksum: sum, from: .upstream, to: dir.appendingPathComponent("a"))
        }
        #expect(refused?.code == .missing)
        await link.coordinator.offer(id, path: file.path, to: link.workerKeys.publicKey)
        _ = try await link.worker.fetch(id, size: 100_000, checksum: sum, from: .upstream, to: dir.appendingPathComponent("b"))
        await link.stop()
    }

    @Test("another enrolled worker cannot feed or end the coordinator's fetch of a result: its CHUNK and MISSING are ignored")
    func intruder() async throws {
        let dir = Fixtures.temporaryDirectory("transfer-intruder")
        var link = try await DataLink.start(options: Self.small, alsoEnrolled: [try CurveKeyPair.generate()])
        let (result, sum) = try await randomFile(dir, "result.splseg", bytes: 200_000)
        let id = try #require(TransferFileID("result-of-the-worker"))
        // The worker has spoken on the data endpoint (it fetched its excerpt), so its route is known.
        let (excerpt, excerptSum) = try await randomFile(dir, "excerpt.splseg", bytes: 1000)
        let excerptID = try #require(TransferFileID("excerpt-of-the-worker"))
        await link.coordinator.offer(excerptID, path: excerpt.path, to: link.workerKeys.publicKey)
        _ = try await link.worker.fetch(excerptID, size: 1000, checksum: excerptSum, from: .upstream,
                                        to: dir.appendingPathComponent("scratch-excerpt.splseg"))
        await link.worker.offer(id, path: result.path)
        let peer = link.workerRoute
        // The worker stops answering for a while; meanwhile an intruder with its own enrolled key
        // says the file is missing and sends a chunk of the right size with the wrong bytes.
        link.tasks[1].cancel()
        try await Task.sleep(for: .milliseconds(200))
        let coordinator = link.coordinator
        let destination = dir.appendingPathComponent("spooled.splseg")
        let fetching = Task { try await coordinator.fetch(id, size: 200_000, checksum: sum, from: peer, to: destination) }
        let intruder = DataEndpoint(try await WireEndpoint.connect(
            link.router.wire.endpoints[0], type: .dealer, context: link.context,
            options: .dealer(curve: .client(keys: link.otherKeys[0], serverKey: link.serverKeys.publicKey), immediate: false)))
        try await Task.sleep(for: .milliseconds(300))
        // (It cannot know the fetch's session; even the right one would not do, since its key is not the worker's.)
        for session in [1, 2, Int(Int32.max)] {
            try await intruder.send(.missing(Missing(file: id, reason: "I say it is gone", session: session)))
            try await intruder.send(.chunk(Chunk(file: id, offset: 0, length: 65_536, fileSize: 200_000, session: session)),
                                    payload: Data(count: 65_536))
        }
        try await Task.sleep(for: .milliseconds(300))
        let worker = link.worker
        link.tasks.append(Task { await worker.run() })
        _ = try await fetching.value
        #expect(try Data(contentsOf: destination) == Data(contentsOf: result))
        await intruder.close(linger: .zero)
        await link.stop()
    }

    @Test("the sender goes away mid-file and comes back: the fetch asks again for what was in flight and finishes")
    func resumesAfterReconnect() async throws {
        let dir = Fixtures.temporaryDirectory("transfer-resume")
        var link = try await DataLink.start(options: Self.small)
        let (file, sum) = try await randomFile(dir, "excerpt.splseg", bytes: 40_000_000)
        let id = try #require(TransferFileID("resume"))
        await link.coordinator.offer(id, path: file.path)
        let destination = dir.appendingPathComponent("received.splseg")
        let worker = link.worker
        let fetching = Task { try await worker.fetch(id, size: 40_000_000, checksum: sum, from: .upstream, to: destination) }
        // Cut the coordinator's side off once part of the file went out, then bind again on the same port.
        let boundTo = link.router.wire.endpoints[0]
        let coordinator = link.coordinator
        #expect(await eventually(within: .seconds(20)) { await coordinator.bytesOut >= 10_000_000 })
        link.tasks[0].cancel()
        await link.router.close(linger: .zero)
        let sentBefore = await link.coordinator.bytesOut
        #expect(sentBefore < 40_000_000, "the transfer was interrupted mid-file")
        try await Task.sleep(for: .milliseconds(300))
        link.router = DataEndpoint(try await WireEndpoint.bind([boundTo], type: .router, context: link.context,
                                                               options: .router(curve: .server(keys: link.serverKeys))))
        link.coordinator = TransferPort(endpoint: link.router, options: Self.small, logger: testLogger)
        let restarted = link.coordinator
        link.tasks.append(Task { await restarted.run() })
        await restarted.offer(id, path: file.path)
        let report = try await fetching.value
        #expect(report.bytes == 40_000_000)
        #expect(try Data(contentsOf: destination) == Data(contentsOf: file))
        // The restarted side sent what had not arrived (at most 30 MB, plus a window for each stall
        // that asked again), not the file from the start (40 MB).
        let resent = await restarted.bytesOut
        #expect(resent <= 40_000_000 - sentBefore + 2_000_000, "only what had not arrived was sent again (\(resent) bytes)")
        #expect(await worker.bytesIn == 40_000_000, "every chunk was accepted once")
        await link.stop()
    }

    @Test("after the coordinator's side restarts, it fetches a result from a worker that has sent it nothing since")
    func fetchesResultAfterCoordinatorRestart() async throws {
        // The coordinator-restarted bug of Deploy/test-hosts.sh: a worker fetched its excerpt from
        // the old coordinator, the coordinator restarted, the worker finished and offered its
        // result. A CURVE ROUTER routes only to a route it has heard its key on, so the new one
        // could not ask for the result until the worker spoke first on the data endpoint.
        let dir = Fixtures.temporaryDirectory("transfer-restart")
        var link = try await DataLink.start(options: Self.small, immediate: true)
        let (excerpt, excerptSum) = try await randomFile(dir, "excerpt.splseg", bytes: 300_000)
        let excerptID = try #require(TransferFileID("x-restart"))
        await link.coordinator.offer(excerptID, path: excerpt.path)
        _ = try await link.worker.fetch(excerptID, size: 300_000, checksum: excerptSum, from: .upstream,
                                        to: dir.appendingPathComponent("scratch-excerpt.splseg"))

        // The coordinator stops and a new one binds the same address, as after SIGTERM and a restart.
        let boundTo = link.router.wire.endpoints[0]
        link.tasks[0].cancel()
        await link.router.close(linger: .zero)
        try await Task.sleep(for: .milliseconds(300))
        link.router = DataEndpoint(try await WireEndpoint.bind([boundTo], type: .router, context: link.context,
                                                               options: .router(curve: .server(keys: link.serverKeys))))
        link.coordinator = TransferPort(endpoint: link.router, options: Self.small, logger: testLogger)
        let restarted = link.coordinator
        link.tasks.append(Task { await restarted.run() })

        // The worker's result, offered after the restart; the new coordinator fetches it, its
        // checksum (by sha256sum) checked before it is moved into place.
        let (result, resultSum) = try await randomFile(dir, "result.splseg", bytes: 400_000)
        let resultID = try #require(TransferFileID("r-restart"))
        await link.worker.offer(resultID, path: result.path)
        let spooled = dir.appendingPathComponent("segment-00001.a1-restart.splseg")
        let report = try await restarted.fetch(resultID, size: 400_000, checksum: resultSum, from: link.workerRoute,
                                               to: spooled)
        #expect(report.bytes == 400_000)
        #expect(try Data(contentsOf: spooled) == Data(contentsOf: result))
        await link.stop()
    }

    @Test("garbage on the data endpoint is refused and counted; the port goes on serving")
    func garbage() async throws {
        let dir = Fixtures.temporaryDirectory("transfer-garbage")
        let link = try await DataLink.start(options: Self.small)
        let codec = WireCodec()
        let chunkHeader = try codec.encode(DataMessage.chunk(Chunk(file: TransferFileID("x")!, offset: 0, length: 10,
                                                                    fileSize: 10, session: 1)))
        let fetchHeader = try codec.encode(DataMessage.fetch(Fetch(file: TransferFileID("x")!, offset: 0, length: 10,
                                                                   session: 1)))
        let hostile: [[Data]] = [
            [Data("not json".utf8)],
            [Data(#"{"protocol":"splice-worker","version":2,"type":"HEARTBEAT","body":{}}"#.utf8)],
            [Data(#"{"protocol":"splice-data","version":1,"type":"FETCH","body":{"file":"../etc/passwd","offset":0,"length":10,"session":1}}"#.utf8)],
            [Data(#"{"protocol":"splice-data","version":1,"type":"FETCH","body":{"file":"x","offset":-5,"length":10,"session":1}}"#.utf8)],
            [Data(#"{"protocol":"splice-data","version":1,"type":"FETCH","body":{"file":"x","offset":0,"length":1073741824,"session":1}}"#.utf8)],
            chunkHeader,
            chunkHeader + [Data(count: 3)],
            fetchHeader + [Data(count: 3)],
            [Data(), Data(), Data()],
            // OFFER was once a message here; nothing sends it, so it is no longer accepted.
            [Data(#"{"protocol":"splice-data","version":1,"type":"OFFER","body":{"file":"x","size":10,"checksum":"sha256:\#(String(repeating: "ab", count: 32))"}}"#.utf8)],
        ]
        for frames in hostile { try await link.dealer.wire.send(frames) }
        let router = link.router
        #expect(await eventually(within: .seconds(20)) {
            router.counters.snapshot().dropped.values.reduce(0, +) >= hostile.count
        })
        let dropped: [WireRejection.Reason: Int]? = router.counters.snapshot().dropped
        #expect(dropped?[.garbled] == 1)
        #expect(dropped?[.wrongProtocol] == 1)
        #expect(dropped?[.invalidBody] == 2, "a bad file id; a CHUNK whose payload is not its length")
        #expect(dropped?[.outOfRange] == 2)
        #expect(dropped?[.missingFrames] == 1)
        #expect(dropped?[.tooManyFrames] == 2)
        #expect(dropped?[.unknownType] == 1, "an OFFER")
        // Still serving.
        let (file, sum) = try await randomFile(dir, "after.splseg", bytes: 100_000)
        let id = try #require(TransferFileID("after"))
        await link.coordinator.offer(id, path: file.path)
        _ = try await link.worker.fetch(id, size: 100_000, checksum: sum, from: .upstream, to: dir.appendingPathComponent("ok"))
        await link.stop()
    }
}

@Suite("Source excerpts cut by the coordinator", .timeLimit(.minutes(4)))
struct ExcerptTaskTests {
    @Test("cut in a `splice media-task` child: the worker's encode from it matches the encode from the source")
    func childCut() async throws {
        let clip = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "4", width: 320, height: 240, sampleRate: 48_000))
        let plan = try await SegmentPlanner(targetDuration: MediaTime(seconds: 1))
            .plan(asset: try await Asset.open(clip), video: VideoSettings(codec: .h264, preset: "ultrafast"),
                  audio: AudioSettings(codec: .aac), fileType: .mp4)
        let media = MediaTaskRunner(isolation: .childProcess(executable: try SpliceBinary.executable().path))
        let dir = Fixtures.temporaryDirectory("excerpt-task")
        let segment = plan.segments[plan.segments.count / 2].index
        let excerpt = dir.appendingPathComponent("excerpt.splseg")
        let written = try await media.excerpt(plan: plan, segment: segment, output: excerpt.path)
        #expect(written.bytes == Int64(try Data(contentsOf: excerpt).count))
        let fromExcerpt = try await SegmentExporter(plan: plan)
            .export(segment: segment, to: dir.appendingPathComponent("a.splseg"), from: excerpt)
        let fromSource = try await SegmentExporter(plan: plan).export(segment: segment, to: dir.appendingPathComponent("b.splseg"))
        #expect(fromExcerpt.checksum == fromSource.checksum)
    }

    @Test("a source that is gone fails the cut with its path in the reason, and leaves no file")
    func sourceGone() async throws {
        let clip = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "2", width: 320, height: 240, sampleRate: nil))
        let dir = Fixtures.temporaryDirectory("excerpt-gone")
        let source = dir.appendingPathComponent("source.mp4")
        try FileManager.default.copyItem(atPath: clip, toPath: source.path)
        let plan = try await SegmentPlanner(targetDuration: MediaTime(seconds: 1))
            .plan(asset: try await Asset.open(source.path), video: VideoSettings(codec: .h264, preset: "ultrafast"),
                  audio: nil, fileType: .mp4)
        try FileManager.default.removeItem(at: source)
        let media = MediaTaskRunner(isolation: .childProcess(executable: try SpliceBinary.executable().path))
        let output = dir.appendingPathComponent("excerpt.splseg")
        let error = await #expect(throws: MediaError.self) {
            _ = try await media.excerpt(plan: plan, segment: 0, output: output.path)
        }
        #expect(error?.code == .fileNotFound)
        #expect(error?.message.contains(source.path) == true, "\(String(describing: error?.message))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }
}
