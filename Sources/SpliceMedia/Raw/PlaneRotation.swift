/// Rotates picture planes by quarter turns. Works on 1- and 2-byte samples (8-bit and 10/12/16-bit
/// formats stored in 16 bits) and on interleaved chroma (NV12: 2 bytes per pixel step); the
/// element is the whole pixel step, so interleaved pairs move together.
enum PlaneRotation {
    /// Copies `src` (width × height elements of `step` bytes) rotated `clockwise` degrees
    /// (90, 180 or 270) into `dst`, whose size is height × width for 90/270.
    static func rotate(src: UnsafePointer<UInt8>, srcStride: Int, width: Int, height: Int,
                       dst: UnsafeMutablePointer<UInt8>, dstStride: Int, step: Int, clockwise: Int) {
        switch step {
        case 1: rotateTyped(src, srcStride, width, height, dst, dstStride, clockwise, UInt8.self)
        case 2: rotateTyped(src, srcStride, width, height, dst, dstStride, clockwise, UInt16.self)
        case 4: rotateTyped(src, srcStride, width, height, dst, dstStride, clockwise, UInt32.self)
        case 8: rotateTyped(src, srcStride, width, height, dst, dstStride, clockwise, UInt64.self)
        default: preconditionFailure("unsupported pixel step \(step)")
        }
    }

    /// Blocked (tiled) so that both the reads and the writes stay in cache.
    private static func rotateTyped<T>(_ srcBytes: UnsafePointer<UInt8>, _ srcStride: Int, _ width: Int, _ height: Int,
                                       _ dstBytes: UnsafeMutablePointer<UInt8>, _ dstStride: Int, _ clockwise: Int,
                                       _: T.Type) {
        let tile = 32
        // Rows are addressed through raw pointers because strides need not be multiples of T.
        @inline(__always) func s(_ x: Int, _ y: Int) -> T {
            UnsafeRawPointer(srcBytes + y * srcStride).loadUnaligned(fromByteOffset: x * MemoryLayout<T>.size, as: T.self)
        }
        @inline(__always) func d(_ x: Int, _ y: Int, _ v: T) {
            UnsafeMutableRawPointer(dstBytes + y * dstStride).storeBytes(of: v, toByteOffset: x * MemoryLayout<T>.size, as: T.self)
        }
        var ty = 0
        while ty < height {
            let yEnd = min(ty + tile, height)
            var tx = 0
            while tx < width {
                let xEnd = min(tx + tile, width)
                for y in ty..<yEnd {
                    for x in tx..<xEnd {
                        let v = s(x, y)
                        switch clockwise {
                        case 90: d(height - 1 - y, x, v)
                        case 180: d(width - 1 - x, height - 1 - y, v)
                        default: d(y, width - 1 - x, v)
                        }
                    }
                }
                tx = xEnd
            }
            ty = yEnd
        }
    }
}
