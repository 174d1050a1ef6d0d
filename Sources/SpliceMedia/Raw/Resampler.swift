internal import CFFmpeg

/// Owns a `SwrContext` converting sample format, rate and channel layout (freed in deinit).
final class Resampler {
    private var context: OpaquePointer?
    let outputRate: Int
    let outputFormat: AVSampleFormat
    let outputChannels: Int

    init(from input: (layout: ChannelLayout, format: AVSampleFormat, rate: Int),
         to output: (layout: ChannelLayout, format: AVSampleFormat, rate: Int)) throws(MediaError) {
        outputRate = output.rate
        outputFormat = output.format
        outputChannels = output.layout.channelCount
        var ctx: OpaquePointer? = nil
        var ret = swr_alloc_set_opts2(&ctx, &output.layout.layout, output.format, Int32(output.rate),
                                      &input.layout.layout, input.format, Int32(input.rate), 0, nil)
        if ret < 0 || ctx == nil {
            throw FFmpeg.error(.invalidSettings, "cannot convert audio from \(input.layout.name) to \(output.layout.name)", ret)
        }
        context = ctx
        ret = swr_init(ctx)
        if ret < 0 {
            throw FFmpeg.error(.invalidSettings, "cannot convert audio from \(input.layout.name) at \(input.rate) Hz "
                               + "to \(output.layout.name) at \(output.rate) Hz", ret)
        }
    }

    deinit { swr_free(&context) }

    /// Converts `count` input samples (nil data flushes the resampler's delay) and appends the
    /// output to `fifo`. Returns the number of output samples produced.
    @discardableResult
    func convert(_ input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, count: Int, into fifo: AudioFifo) throws(MediaError) -> Int {
        let capacity = Int(swr_get_out_samples(context, Int32(count))) + 32
        let produced = try fifo.withAppendBuffer(capacity: capacity) { out throws(MediaError) -> Int in
            let n = swr_convert(context, out, Int32(capacity), input, Int32(count))
            if n < 0 { throw FFmpeg.error(.decodeFailed, "audio conversion failed", n) }
            return Int(n)
        }
        return produced
    }
}

/// Owns a planar/packed sample buffer of fixed format and channel count, used as a FIFO.
final class AudioFifo {
    private let fifo: OpaquePointer
    let format: AVSampleFormat
    let channels: Int
    private var scratch: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?
    private var scratchCapacity = 0

    init(format: AVSampleFormat, channels: Int) {
        guard let f = av_audio_fifo_alloc(format, Int32(channels), 4096) else { fatalError("av_audio_fifo_alloc: out of memory") }
        fifo = f
        self.format = format
        self.channels = channels
    }

    deinit {
        av_audio_fifo_free(fifo)
        freeScratch()
    }

    private func freeScratch() {
        if let scratch {
            av_freep(scratch)
            scratch.deallocate()
        }
        scratch = nil
        scratchCapacity = 0
    }

    var count: Int { Int(av_audio_fifo_size(fifo)) }

    /// Lets `fill` write up to `capacity` samples into a scratch buffer, then appends what it wrote.
    func withAppendBuffer(capacity: Int, _ fill: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) throws(MediaError) -> Int)
        throws(MediaError) -> Int {
        if capacity > scratchCapacity {
            freeScratch()
            let planes = av_sample_fmt_is_planar(format) != 0 ? channels : 1
            let array = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: planes)
            array.initialize(repeating: nil, count: planes)
            if av_samples_alloc(array, nil, Int32(channels), Int32(capacity), format, 0) < 0 {
                array.deallocate()
                fatalError("av_samples_alloc: out of memory")
            }
            scratch = array
            scratchCapacity = capacity
        }
        let n = try fill(scratch!)
        if n > 0 { try append(scratch!, count: n) }
        return n
    }

    /// Appends `count` samples from `data` (planes per the FIFO's format).
    func append(_ data: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, count: Int) throws(MediaError) {
        let written = data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) {
            av_audio_fifo_write(fifo, $0, Int32(count))
        }
        if written < count { throw MediaError(.internalError, "audio buffer could not grow (out of memory)") }
    }

    /// Removes `count` samples from the front without reading them.
    func drain(_ count: Int) {
        av_audio_fifo_drain(fifo, Int32(min(count, self.count)))
    }

    /// Moves up to `count` samples from the front into `buffer` (a packed format: one plane).
    /// Returns how many were moved.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        var plane: UnsafeMutableRawPointer? = buffer
        return Int(max(0, av_audio_fifo_read(fifo, &plane, Int32(count))))
    }

    /// Moves up to `count` samples from the front into `frame` (which must have buffers of at
    /// least that many samples). Returns how many were moved.
    func read(into frame: Frame, count: Int) -> Int {
        let n = frame.pointer.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) {
            av_audio_fifo_read(fifo, $0, Int32(count))
        }
        return Int(max(0, n))
    }
}
