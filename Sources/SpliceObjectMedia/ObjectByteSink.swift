import SpliceMedia
import SpliceObjectStore

/// An output streamed into a multipart upload from a muxer's thread: parts go up while the
/// muxer writes; the first part is held until ``finish()`` so the muxer can fill in its header
/// (``ObjectWriter/patch(at:with:)``); the object appears only then, and ``abort()`` — or a sink
/// let go unfinished — leaves no upload behind.
final class ObjectByteSink: MediaByteSink {
    private let writer: ObjectWriter

    init(_ writer: ObjectWriter) {
        self.writer = writer
    }

    var bytesWritten: Int64 { writer.bytesWritten }

    func append(_ bytes: UnsafeRawBufferPointer) throws(MediaError) {
        do {
            try writer.writeBlocking(bytes)
        } catch {
            throw ObjectMediaStorage.mediaError(error, .output)
        }
    }

    func patch(at offset: Int64, _ bytes: UnsafeRawBufferPointer) throws(MediaError) {
        do {
            try writer.patch(at: offset, with: bytes)
        } catch {
            throw ObjectMediaStorage.mediaError(error, .output)
        }
    }

    func finish() throws(MediaError) {
        do {
            try writer.finishBlocking()
        } catch {
            throw ObjectMediaStorage.mediaError(error, .output)
        }
    }

    func abort() {
        writer.abortBlocking()
    }
}
