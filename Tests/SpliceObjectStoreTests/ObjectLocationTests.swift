import SpliceObjectStore
import Testing

@Suite("ObjectLocation: s3://BUCKET/KEY, checked where it enters")
struct ObjectLocationTests {
    @Test("parses bucket and key as written, keeps the key's bytes and round-trips")
    func parsing() throws {
        let location = try ObjectLocation(parsing: "s3://media-bucket/show/master.m3u8")
        #expect(location.bucket == "media-bucket")
        #expect(location.key == "show/master.m3u8")
        #expect(location.description == "s3://media-bucket/show/master.m3u8")
        #expect(try ObjectLocation(parsing: location.description) == location)
        #expect(try ObjectLocation(parsing: "S3://b12/a%20b/../c//d").key == "a%20b/../c//d", "no decoding, no normalising")
        #expect(try ObjectLocation(parsing: "s3://bucket").isBucket)
        #expect(try ObjectLocation(parsing: "s3://bucket/").key == "")
        #expect(ObjectLocation.isObjectURL("s3://b/k") && !ObjectLocation.isObjectURL("/tmp/s3://x")
            && !ObjectLocation.isObjectURL("https://b.s3.amazonaws.com/k") && !ObjectLocation.isObjectURL("s3://"))
    }

    @Test("refuses what S3 would refuse, quoting the text and the rule", arguments: [
        ("/local/path.mp4", "s3://BUCKET/KEY"), ("s3://ab/k", "3 to 63"), ("s3://Upper/k", "lowercase"),
        ("s3://under_score/k", "lowercase"), ("s3://-dash/k", "starts and ends"), ("s3://a..b/k", "two dots"),
        ("s3://192.168.1.10/k", "IP address"), ("s3://bucket/line\nbreak", "control characters"),
        ("s3://bucket/" + String(repeating: "é", count: 513), "1,024"),
    ])
    func refusals(text: String, rule: String) {
        #expect {
            _ = try ObjectLocation(parsing: text)
        } throws: { error in
            guard let error = error as? ObjectStoreError else { return false }
            return error.code == .invalidLocation && error.message.contains(rule) && !error.isRetryable
        }
    }

    @Test("siblings, folders and roots: a playlist's renditions, --output-root confinement")
    func relations() throws {
        let master = try ObjectLocation(parsing: "s3://b12/shows/ep1/master.m3u8")
        #expect(master.name == "master.m3u8")
        #expect(master.folder == "shows/ep1/")
        #expect(try master.sibling("ep1-720p/index.m3u8").description == "s3://b12/shows/ep1/ep1-720p/index.m3u8")
        #expect(try ObjectLocation(parsing: "s3://b12/shows").appending("x.mp4").key == "shows/x.mp4")
        #expect(try ObjectLocation(parsing: "s3://b12/").appending("x.mp4").key == "x.mp4")
        let root = try ObjectLocation(parsing: "s3://b12/shows")
        #expect(master.isWithin(root))
        #expect(master.isWithin(try ObjectLocation(parsing: "s3://b12")))
        #expect(!(try ObjectLocation(parsing: "s3://b12/showsextra/a.mp4")).isWithin(root))
        #expect(!(try ObjectLocation(parsing: "s3://other/shows/a.mp4")).isWithin(root))
    }
}
