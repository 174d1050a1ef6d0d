import Foundation
import SpliceCore
import SpliceMedia
import SpliceTestSupport
import Testing
@testable import SpliceDaemon


@Suite("Partial files: checked before they are moved into place")
struct PartialFileTests {
    static let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })

    func destination() -> URL {
        // Under the test process's scratch folder, removed when the process ends.
        Fixtures.temporaryDirectory("partial").appendingPathComponent("segment.splseg")
    }

    func checksum(_ data: Data) -> SHA256Digest {
        let stream = SHA256Stream()
        stream.update(data)
        return stream.finish()
    }

    @Test("chunks in any order: the file is hashed (read back when they came out of order) and renamed into place",
          arguments: [false, true])
    func anyOrder(reversed: Bool) async throws {
        let url = destination()
        let file = try await PartialFile.create(destination: url)
        var offsets = Array(stride(from: 0, to: Self.bytes.count, by: 65_536))
        if reversed { offsets.reverse() }
        for offset in offsets {
            try await file.write(Self.bytes.subdata(in: offset..<min(offset + 65_536, Self.bytes.count)), at: Int64(offset))
        }
        try await file.commit(size: Int64(Self.bytes.count), checksum: checksum(Self.bytes))
        #expect(try Data(contentsOf: url) == Self.bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path) == ["segment.splseg"])
    }

    @Test("a wrong size or checksum: refused, and nothing is left at the destination or beside it", arguments: [false, true])
    func refused(reversed: Bool) async throws {
        let url = destination()
        var damaged = Self.bytes
        damaged[123_456] ^= 0x40
        do {
            let file = try await PartialFile.create(destination: url)
            let halves = [(0, 150_000), (150_000, 300_000)]
            for (start, end) in reversed ? halves.reversed() : halves {
                try await file.write(damaged.subdata(in: start..<end), at: Int64(start))
            }
            let error = await #expect(throws: TransferError.self) {
                try await file.commit(size: Int64(Self.bytes.count), checksum: checksum(Self.bytes))
            }
            #expect(error?.code == .checksumMismatch)
            let short = await #expect(throws: TransferError.self) {
                try await file.commit(size: Int64(Self.bytes.count) + 1, checksum: checksum(Self.bytes))
            }
            #expect(short?.code == .sizeMismatch)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).isEmpty)
    }
}
