import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

/// `-y` semantics on a bucket: without overwrite an existing object is refused and left as it
/// was — by `If-None-Match: *` where the service has it (atomic), by a HEAD first where it may
/// not — and with overwrite it is replaced.
@Suite("Object store: an existing object is refused unless overwrite is asked", .serialized)
struct ConditionalWriteTests {
    @Test("each guard refuses a PUT over an existing object and keeps it; overwrite replaces it",
          arguments: [ObjectStoreConfiguration.ConditionalWrites.automatic, .ifNoneMatch, .headThenWrite])
    func singlePut(mode: ObjectStoreConfiguration.ConditionalWrites) async throws {
        let s3 = try await S3Fixture.make { $0.conditionalWrites = mode }
        let location = try s3.location("exists.bin")
        let original = S3Fixture.bytes(1000, seed: 1)
        try await s3.store.put(original, at: location, overwrite: false)
        let error = await #expect(throws: ObjectStoreError.self) {
            try await s3.store.put(S3Fixture.bytes(1000, seed: 2), at: location, overwrite: false)
        }
        #expect(error?.code == .alreadyExists)
        #expect(error?.message.contains("\(location)") == true)
        #expect(error?.message.contains("overwrite") == true)
        #expect(try await s3.store.get(location) == original, "the existing object is untouched")

        let replacement = S3Fixture.bytes(500, seed: 3)
        try await s3.store.put(replacement, at: location, overwrite: true)
        #expect(try await s3.store.get(location) == replacement)
    }

    @Test("If-None-Match alone (no HEAD) is what refuses: the service answers 412")
    func headerDoesIt() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint) { $0.conditionalWrites = .ifNoneMatch }
        let location = try s3.location("exists.bin")
        try await s3.store.put([1, 2, 3], at: location, overwrite: false)
        let error = await #expect(throws: ObjectStoreError.self) {
            try await s3.store.put([4, 5, 6], at: location, overwrite: false)
        }
        #expect(error?.code == .alreadyExists)
        let records = try tap.records()
        #expect(!records.contains { $0.method == "HEAD" })
        #expect(records.filter { $0.method == "PUT" }.allSatisfy { $0.header("If-None-Match") == "*" })
    }

    @Test("a key that appears while a multipart write runs is kept: completion is refused, the upload aborted")
    func multipartRace() async throws {
        let s3 = try await S3Fixture.make { $0.conditionalWrites = .ifNoneMatch }
        let location = try s3.location("race.bin")
        let writer = try await s3.store.openWriter(for: location, overwrite: false)
        try await writer.write(S3Fixture.bytes(12 << 20, seed: 5))
        let winner = S3Fixture.bytes(777, seed: 6)
        try await s3.store.put(winner, at: location, overwrite: false)  // another writer got there first
        let error = await #expect(throws: ObjectStoreError.self) { try await writer.finish() }
        #expect(error?.code == .alreadyExists)
        #expect(try await s3.store.get(location) == winner)
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)
    }

    @Test("on a custom endpoint the writer refuses an existing object when it opens, before any upload")
    func refusedAtOpen() async throws {
        let s3 = try await S3Fixture.make()  // .automatic on a custom endpoint: HEAD first
        let location = try s3.location("early.bin")
        try await s3.store.put([9], at: location, overwrite: false)
        let error = await #expect(throws: ObjectStoreError.self) {
            _ = try await s3.store.openWriter(for: location, overwrite: false)
        }
        #expect(error?.code == .alreadyExists)
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)
        let writer = try await s3.store.openWriter(for: location, overwrite: true)
        try await writer.write(S3Fixture.bytes(9 << 20, seed: 8))
        try await writer.finish()
        #expect(try await s3.store.info(location)?.size == 9 << 20)
    }
}
