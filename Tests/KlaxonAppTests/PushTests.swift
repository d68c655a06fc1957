import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonServer
import NIOCore
import Testing

@Suite("the push API: bounded bodies", .serialized, .timeLimit(.minutes(10)))
struct PushTests {
    func push(_ server: ChatServer, _ body: String, chunked: Bool = false) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/api/v1/readings")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer team-token")
        request.headers.add(name: "Content-Type", value: "text/csv")
        let buffer = ByteBuffer(string: body)
        if chunked {
            // No Content-Length: the limit is found while reading.
            let slices = stride(from: 0, to: buffer.readableBytes, by: 65_536).map {
                buffer.getSlice(at: $0, length: min(65_536, buffer.readableBytes - $0))!
            }
            request.body = .stream(slices.async, length: .unknown)
        } else {
            request.body = .bytes(buffer)
        }
        // No deadline of our own: a server that never answers is a hang, bounded by the suite's time limit.
        let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    func csv(rows: Int, station: String) -> String {
        "station,metric,time,value\n"
            + (0..<rows).map { "\(station),gage_height,\(Timestamp.format(1_767_225_600 + Int64($0) * 60)),1.5" }
            .joined(separator: "\n") + "\n"
    }

    @Test("a body over api.max_push_bytes (4 MiB by default) is 413, with or without Content-Length; nothing is stored")
    func oversizedPushIsRefused() async throws {
        try await ChatServer.with { server in
            let big = csv(rows: 120_000, station: "BIG")  // about 5 MiB
            #expect(big.utf8.count > KlaxonHTTP.Settings.defaultMaxPushBytes)
            let sized = try await push(server, big)
            #expect(sized.0 == 413)
            #expect(sized.1.contains("klaxon ingest"))
            #expect(try await push(server, big, chunked: true).0 == 413)
            await #expect(try server.store.series(station: "BIG").isEmpty)
            // Under the limit it is taken, in one piece.
            let ok = try await push(server, csv(rows: 50_000, station: "OK"), chunked: true)  // about 2 MiB
            #expect(ok.0 == 200, "\(ok.1)")
            #expect(ok.1.contains("\"inserted\":50000"))
        }
    }

    @Test("a push of bad lines reports the first 100 and counts the rest")
    func rejectionsAreBounded() async throws {
        try await ChatServer.with { server in
            let body = "station,metric,time,value\n" + String(repeating: "S,gage_height,soon,1\n", count: 5_000)
            let (status, text) = try await push(server, body)
            #expect(status == 400)
            let o = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect((o["rejected"] as? [String])?.count == 100)
            #expect(o["rejected_count"] as? Int == 5_000)
        }
    }

    @Test("api.max_push_bytes sets the limit, within 1 KiB to 256 MiB")
    func limitIsConfigurable() throws {
        let s = try Scratch()
        let good = try s.write("good.yaml", "api: {token: t, max_push_bytes: 65536}\n")
        #expect(try Config.load(path: good).maxPushBytes == 65_536)
        #expect(try Config.load(path: s.write("default.yaml", "api: {token: t}\n")).maxPushBytes == 4 << 20)
        let bad = try s.write("bad.yaml", "api: {token: t, max_push_bytes: 12}\n")
        #expect(throws: (any Error).self) { try Config.load(path: bad) }
    }
}
