import SpliceWire
import Testing

@Suite("Running without keys only on loopback")
struct EndpointSecurityTests {
    @Test("loopback and local-only endpoints", arguments: [
        "tcp://127.0.0.1:7450", "tcp://127.0.0.1:*", "tcp://127.1.2.3:7450", "tcp://localhost:7450",
        "tcp://[::1]:7450", "tcp://lo:7450", "ipc:///run/splice.sock", "inproc://test",
        "tcp://127.0.0.1;127.0.0.1:7450",
    ])
    func loopback(endpoint: String) throws {
        #expect(EndpointSecurity.isLoopback(endpoint))
        try EndpointSecurity.checkBinding(endpoint, curveEnabled: false, insecure: false)
    }

    @Test("reachable from the network", arguments: [
        "tcp://*:7450", "tcp://0.0.0.0:7450", "tcp://[::]:7450", "tcp://192.168.1.10:7450", "tcp://eth0:7450",
        "tcp://coordinator.internal:7450", "tcp://127.0.0.1.evil.com:7450", "tcp://1270.0.0.1:7450", "ws://127.0.0.1:80",
        "tcp://127.0.0.256:7450",
    ])
    func network(endpoint: String) throws {
        #expect(!EndpointSecurity.isLoopback(endpoint))
        do {
            try EndpointSecurity.checkBinding(endpoint, curveEnabled: false, insecure: false)
            Issue.record("allowed \(endpoint) without keys")
        } catch {
            #expect(error.code == .insecureBinding)
            #expect(error.message.contains("--insecure"))
        }
        // With keys, or explicitly insecure, it may start.
        try EndpointSecurity.checkBinding(endpoint, curveEnabled: true, insecure: false)
        try EndpointSecurity.checkBinding(endpoint, curveEnabled: false, insecure: true)
    }
}
