internal import CCurl
internal import CCurlShims
import Foundation

/// Owns one libcurl easy handle and performs requests on it, one at a time, reusing its
/// connection (keep-alive) from one request to the next. Frees the handle in `deinit`.
///
/// Confined to one transfer thread (``TransferThreads``): never used from two threads, hence
/// `@unchecked Sendable` (it is created on the pool's thread and only ever touched there).
final class CurlEasy: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    /// CURLOPT_ERRORBUFFER: libcurl writes its explanation of a failure here (CURL_ERROR_SIZE bytes).
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    /// A fresh handle; nil only when libcurl cannot initialise (out of memory, no TLS library).
    init?() {
        guard splice_curl_global_init() == CURLE_OK, let handle = curl_easy_init() else {
            errorBuffer.deallocate()
            return nil
        }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Sends `request` and waits for the whole answer. Runs on the calling thread: call it only
    /// from a transfer thread, never from Swift's cooperative pool.
    func perform(_ request: HTTPRequest, timeouts: Timeouts, cancellation: CancellationFlag)
        -> Result<HTTPResponse, TransportFailure>
    {
        curl_easy_reset(handle)
        errorBuffer[0] = 0
        let state = TransferState(body: request.body, cancellation: cancellation, sink: request.sink)
        state.received.reserveCapacity(request.expectedResponseBytes)
        let context = Unmanaged.passUnretained(state).toOpaque()
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        // Only headers with values: libcurl 7.88 signs the `Name:` entries that remove one of its
        // own headers (Expect, Accept) although it does not send them — the signature would not
        // match (the botocore comparison test found it). Its unsigned Expect: 100-continue stays:
        // a refused part is then refused before its bytes are sent.
        for (name, value) in request.headers {
            headers = curl_slist_append(headers, "\(name): \(value)") ?? headers
        }

        var code = setOptions(request, timeouts: timeouts, headers: headers, context: context)
        if code == CURLE_OK {
            code = withExtendedLifetime(state) { curl_easy_perform(handle) }
        }
        guard code == CURLE_OK else {
            return .failure(failure(code, cancelled: cancellation.isCancelled))
        }
        var status = 0
        _ = splice_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(HTTPResponse(status: status, headers: state.headers, body: state.received))
    }

    /// Connection and stall limits for one request.
    struct Timeouts: Sendable {
        var connect: Duration
        var stall: Duration
    }

    // MARK: - Options

    private func setOptions(_ request: HTTPRequest, timeouts: Timeouts, headers: UnsafeMutablePointer<curl_slist>?,
                            context: UnsafeMutableRawPointer) -> CURLcode {
        let stallSeconds = max(1, Int(timeouts.stall.components.seconds))
        let connectMilliseconds = max(1, Int(timeouts.connect.components.seconds) * 1000
            + Int(timeouts.connect.components.attoseconds / 1_000_000_000_000_000))
        var settings: [CURLcode] = [
            splice_curl_setopt_string(handle, CURLOPT_URL, request.url),
            splice_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
            // S3 keys are names: `a/../b` must reach the server as written, not be normalised.
            splice_curl_setopt_long(handle, CURLOPT_PATH_AS_IS, 1),
            splice_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
            splice_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1),
            splice_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectMilliseconds),
            // A stall, not a total: a 64 MiB part on a slow link may take minutes and still move.
            splice_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1),
            splice_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, stallSeconds),
            splice_curl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1),
            splice_curl_setopt_long(handle, CURLOPT_BUFFERSIZE, 512 << 10),
            splice_curl_setopt_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, 2 << 20),
            splice_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer),
            splice_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers),
            splice_curl_setopt_write_function(handle, CURLOPT_HEADERFUNCTION, receiveHeader),
            splice_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context),
            splice_curl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION, receiveBody),
            splice_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context),
            splice_curl_setopt_read_function(handle, sendBody),
            splice_curl_setopt_pointer(handle, CURLOPT_READDATA, context),
            splice_curl_setopt_seek_function(handle, rewindBody),
            splice_curl_setopt_pointer(handle, CURLOPT_SEEKDATA, context),
            splice_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0),
            splice_curl_setopt_xferinfo_function(handle, checkCancellation),
            splice_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, context),
        ]
        switch request.method {
        case .get:
            settings.append(splice_curl_setopt_long(handle, CURLOPT_HTTPGET, 1))
        case .head:
            settings.append(splice_curl_setopt_long(handle, CURLOPT_NOBODY, 1))
        case .put:
            settings.append(splice_curl_setopt_long(handle, CURLOPT_UPLOAD, 1))
            settings.append(splice_curl_setopt_offset(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(request.body.count)))
        case .post:
            settings.append(splice_curl_setopt_long(handle, CURLOPT_POST, 1))
            settings.append(splice_curl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
        case .delete:
            settings.append(splice_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, "DELETE"))
        }
        if let signing = request.signing {
            settings.append(splice_curl_setopt_string(handle, CURLOPT_AWS_SIGV4, signing.provider))
            settings.append(splice_curl_setopt_string(handle, CURLOPT_USERNAME, signing.accessKeyID))
            settings.append(splice_curl_setopt_string(handle, CURLOPT_PASSWORD, signing.secretAccessKey))
        }
        return settings.first { $0 != CURLE_OK } ?? CURLE_OK
    }

    private func failure(_ code: CURLcode, cancelled: Bool) -> TransportFailure {
        let detail = String(cString: errorBuffer)
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let kind: TransportFailure.Kind
        switch code {
        case _ where cancelled:
            kind = .cancelled  // by the progress callback, or a sink that stopped taking bytes
        case CURLE_OPERATION_TIMEDOUT:
            kind = .timeout
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT, CURLE_SEND_ERROR,
             CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SSL_CONNECT_ERROR, CURLE_HTTP2,
             CURLE_HTTP2_STREAM, CURLE_WEIRD_SERVER_REPLY, CURLE_SEND_FAIL_REWIND:
            kind = .connection
        default:
            kind = .permanent
        }
        return TransportFailure(kind: kind, curlCode: Int(code.rawValue), message: message)
    }
}

/// The state libcurl's callbacks share during one transfer (passed to them as user data).
private final class TransferState {
    let body: [UInt8]
    var bodyOffset = 0
    var received: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    /// The status of the response being received (from its status line).
    var status = 0
    let cancellation: CancellationFlag
    let sink: (any ResponseSink)?

    init(body: [UInt8], cancellation: CancellationFlag, sink: (any ResponseSink)?) {
        self.body = body
        self.cancellation = cancellation
        self.sink = sink
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> TransferState {
        Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
    }
}

// MARK: - Callbacks (C function pointers: they capture nothing, the state comes as user data)

private let receiveBody: curl_write_callback = { data, size, count, context in
    let state = TransferState.from(context)
    let length = size * count
    guard length > 0, let data else { return length }
    let bytes = UnsafeRawBufferPointer(start: data, count: length)
    if let sink = state.sink, (200..<300).contains(state.status) {
        return sink.accept(bytes) ? length : 0  // 0: libcurl stops with a write error
    }
    state.received.append(contentsOf: bytes)
    return length
}

private let receiveHeader: curl_write_callback = { data, size, count, context in
    let state = TransferState.from(context)
    let length = size * count
    guard let data else { return length }
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    if line.hasPrefix("HTTP/") {
        state.headers = []  // a new response (after 100 Continue, say): only the final one counts
        state.status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        state.headers.append((name, value))
    }
    return length
}

private let sendBody: curl_read_callback = { buffer, size, count, context in
    let state = TransferState.from(context)
    guard let buffer else { return 0 }
    let length = min(size * count, state.body.count - state.bodyOffset)
    guard length > 0 else { return 0 }
    state.body.withUnsafeBytes { bytes in
        UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + state.bodyOffset, byteCount: length)
    }
    state.bodyOffset += length
    return length
}

private let rewindBody: curl_seek_callback = { context, offset, origin in
    let state = TransferState.from(context)
    guard origin == SEEK_SET, offset >= 0, offset <= state.body.count else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
    state.bodyOffset = Int(offset)
    return Int32(CURL_SEEKFUNC_OK)
}

private let checkCancellation: curl_xferinfo_callback = { context, _, _, _, _ in
    TransferState.from(context).cancellation.isCancelled ? 1 : 0
}
