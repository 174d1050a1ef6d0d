internal import CCurl
internal import CCurlShims
import Dispatch
import Foundation

/// POSTs a webhook delivery with libcurl: one easy handle per delivery, on a Dispatch queue (never
/// Swift's cooperative pool), a total timeout, http and https only, no redirects followed, the
/// receiver's answer read and dropped (its status is what counts).
enum WebhookPoster {
    /// How one POST came out: the status, or why there was none.
    enum Outcome: Sendable {
        case answered(status: Int)
        case failed(String)
    }

    private static let queue = DispatchQueue(label: "splice.webhooks", attributes: .concurrent)

    static func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async -> Outcome {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: perform(url: url, headers: headers, body: body, timeout: timeout)) }
        }
    }

    private static func perform(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) -> Outcome {
        guard splice_curl_global_init() == CURLE_OK, let handle = curl_easy_init() else {
            return .failed("libcurl could not start")
        }
        defer { curl_easy_cleanup(handle) }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }
        errorBuffer[0] = 0
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") ?? list }
        // No Expect: 100-continue (a receiver that does not answer it would cost a second).
        list = curl_slist_append(list, "Expect:") ?? list
        let milliseconds = max(1, Int(timeout.components.seconds) * 1000
            + Int(timeout.components.attoseconds / 1_000_000_000_000_000))
        var body = body
        let code: CURLcode = body.withUnsafeMutableBytes { bytes in
            let settings: [CURLcode] = [
                splice_curl_setopt_string(handle, CURLOPT_URL, url),
                splice_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
                splice_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
                splice_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0),
                splice_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, milliseconds),
                splice_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, min(milliseconds, 5000)),
                splice_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer),
                splice_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list),
                splice_curl_setopt_long(handle, CURLOPT_POST, 1),
                splice_curl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count)),
                splice_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, bytes.baseAddress),
                splice_curl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION, discard),
            ]
            if let failed = settings.first(where: { $0 != CURLE_OK }) { return failed }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            return .failed(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        var status = 0
        _ = splice_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .answered(status: status)
    }
}

/// The receiver's body is not kept (a C function pointer: it captures nothing).
private let discard: curl_write_callback = { _, size, count, _ in size * count }
