import Dispatch
import Foundation

/// A local file sent through an ``ObjectWriter``: read a part at a time on a Dispatch queue of
/// its own (never the cooperative pool) while the previous parts upload; aborted on any error.
struct FileUpload: Sendable {
    let path: String
    let writer: ObjectWriter

    func run() async throws(ObjectStoreError) -> ObjectInfo {
        let queue = DispatchQueue(label: "splice.objectstore.file-upload")
        let path = self.path
        guard let handle = FileHandle(forReadingAtPath: path) else {
            await writer.abort()
            throw ObjectStoreError(.localFile, "cannot open \(path) to upload it to \(writer.location); check that it "
                + "exists and is readable")
        }
        defer { try? handle.close() }
        let chunk = writer.client.configuration.partSize
        do {
            while true {
                let bytes = try await ThreadBridge.offPool(on: queue) { () throws(ObjectStoreError) -> [UInt8] in
                    do {
                        return [UInt8](try handle.read(upToCount: chunk) ?? Data())
                    } catch {
                        throw ObjectStoreError(.localFile, "reading \(path) failed (\(error)); nothing was uploaded")
                    }
                }
                if bytes.isEmpty { break }
                try await writer.write(bytes)
            }
            return try await writer.finish()
        } catch {
            await writer.abort()
            throw error
        }
    }
}
