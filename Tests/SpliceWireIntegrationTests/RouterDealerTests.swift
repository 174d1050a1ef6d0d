import Foundation
import SpliceWire
import Testing

@Suite("ROUTER and DEALER over tcp://127.0.0.1", .timeLimit(.minutes(1)))
struct RouterDealerTests {
    @Test("a DEALER's multipart message reaches the ROUTER, and the reply comes back")
    func roundTrip() async throws {
        let context = try WireContext()
        let router = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context)
        #expect(router.endpoints.count == 1)
        #expect(!router.endpoints[0].hasSuffix("*"))
        let dealer = try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context)

        try await dealer.send([Data(text: "hello"), Data(), Data(text: "world")])
        let request = try #require(await receive(router))
        #expect(request.texts == ["hello", "", "world"])
        #expect(request.peer.routingID != nil)
        #expect(request.peer.publicKey == nil)

        try await router.send([Data(text: "reply")], to: request.peer)
        let reply = try #require(await receive(dealer))
        #expect(reply.texts == ["reply"])
        #expect(reply.peer == .upstream)

        #expect(router.counters.snapshot().received == 1)
        #expect(router.counters.snapshot().delivered == 1)
        #expect(dealer.counters.snapshot().sent == 1)
        await dealer.close()
        await router.close()
        await context.terminate()
    }
}
