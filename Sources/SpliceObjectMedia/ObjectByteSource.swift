import SpliceMedia
import SpliceObjectStore

/// An object read for a demuxer: ``ObjectReader/readBlocking(at:into:)`` from the demuxer's thread.
final class ObjectByteSource: MediaByteSource {
    private let reader: ObjectReader

    init(_ reader: ObjectReader) {
        self.reader = reader
    }

    var size: Int64 { reader.size }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        do {
            return try reader.readBlocking(at: offset, into: buffer)
        } catch {
            throw ObjectMediaStorage.mediaError(error, .input)
        }
    }
}
