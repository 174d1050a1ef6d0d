import Testing
@testable import SpliceDaemon


@Suite("Chunk window: credit-based fetching")
struct ChunkWindowTests {
    @Test("never more than the credit in flight; the last chunk is short; complete once every byte arrived")
    func credit() {
        var window = ChunkWindow(size: 10 * 1000 + 7, chunkBytes: 1000, credit: 3)
        var asked = window.requests()
        #expect(asked.map(\.offset) == [0, 1000, 2000])
        #expect(window.requests().isEmpty, "the window is full")
        var received = 0
        while !asked.isEmpty {
            let next = asked.removeFirst()
            #expect(window.check(offset: next.offset, length: next.length, fileSize: 10_007) == .accept)
            window.received(offset: next.offset)
            received += next.length
            asked += window.requests()
            #expect(window.outstanding.count <= 3)
        }
        #expect(received == 10_007)
        #expect(window.isComplete)
    }

    @Test("after a stall everything in flight is asked again; a late duplicate is ignored, not counted")
    func resume() {
        var window = ChunkWindow(size: 4000, chunkBytes: 1000, credit: 2)
        _ = window.requests()
        #expect(window.check(offset: 0, length: 1000, fileSize: 4000) == .accept)
        window.received(offset: 0)
        #expect(window.requests().map(\.offset) == [2000])
        #expect(window.resend().map(\.offset) == [1000, 2000])
        #expect(window.check(offset: 0, length: 1000, fileSize: 4000) == .duplicate)
        #expect(window.receivedBytes == 1000)
    }

    @Test("a chunk never asked for, of the wrong length, or of another file size is invalid")
    func invalid() {
        var window = ChunkWindow(size: 4000, chunkBytes: 1000, credit: 2)
        _ = window.requests()
        #expect(window.check(offset: 3000, length: 1000, fileSize: 4000) != .accept)
        #expect(window.check(offset: 0, length: 999, fileSize: 4000) != .accept)
        #expect(window.check(offset: 0, length: 1000, fileSize: 5000) != .accept)
        #expect(!window.isComplete)
    }

    @Test("an empty file is complete at once")
    func empty() {
        var window = ChunkWindow(size: 0, chunkBytes: 1000, credit: 2)
        #expect(window.requests().isEmpty)
        #expect(window.isComplete)
    }
}
