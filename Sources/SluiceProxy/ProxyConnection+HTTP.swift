import SluiceLog
import SluiceMux
import SluiceTunnel

/// HTTP proxy clients: `CONNECT host:port` (a tunnel, as for HTTPS), and plain requests in
/// absolute form (`GET http://host/path HTTP/1.1`), which are rewritten to origin form and sent with
/// `Connection: close`: one request per connection, the connection closed after its response
/// (clients see `Connection: close` from the origin and open a new one for the next request).
extension ProxyConnection {
    func advanceHTTP() {
        let parsed: (head: HTTPRequestHead, length: Int)?
        do throws(HTTPRequestHead.Problem) {
            parsed = try HTTPRequestHead.parse(inbound.readableBytes)
        } catch {
            return respond(error.status, "the request could not be read (\(error))")
        }
        guard let (head, length) = parsed else { return }
        inbound.consume(length)
        if !server.users.isEmpty && !server.users.accepts(proxyAuthorization: head.value(of: "Proxy-Authorization")) {
            Log.info("HTTP client \(peer) refused: no valid Proxy-Authorization", "proxy")
            return respond(407, "proxy authentication required", extra: ["Proxy-Authenticate: Basic realm=\"sluice\""])
        }
        if head.method == "CONNECT" {
            guard let destination = ProxyTarget.destination(authority: Substring(head.target), defaultPort: nil) else {
                return respond(400, "CONNECT needs host:port, got \(head.target)")
            }
            return open(destination) { result in
                switch result {
                case .success: return Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)
                case .failure(let failure): return Self.failureResponse(failure)
                }
            }
        }
        guard head.target.lowercased().hasPrefix("http://") else {
            return respond(400, "a proxy request names an absolute http:// URL (or uses CONNECT); got \(head.target)")
        }
        let rest = head.target.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var path = String(rest.dropFirst(authority.count))
        if path.isEmpty || path.first != "/" { path = "/" + path }
        guard let destination = ProxyTarget.destination(authority: authority, defaultPort: 80) else {
            return respond(400, "no usable host in \(head.target)")
        }
        // The rewritten head goes first; the body (if any) follows from `inbound` and the socket.
        let body = Array(inbound.readableBytes)
        inbound.removeAll()
        inbound.append(Array(Self.originForm(head, path: path, authority: String(authority)).utf8))
        inbound.append(body)
        closeAfterResponse = true
        open(destination) { result in
            switch result {
            case .success: return nil  // the origin's response is the answer
            case .failure(let failure): return Self.failureResponse(failure)
            }
        }
    }

    /// The request in origin form for the origin server: path only, hop-by-hop and proxy fields
    /// dropped (RFC 9110 §7.6.1), `Host` kept or added, `Connection: close`.
    static func originForm(_ head: HTTPRequestHead, path: String, authority: String) -> String {
        var hopByHop: Set<String> = ["connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "trailer", "upgrade"]
        for token in (head.value(of: "Connection") ?? "").split(separator: ",") {
            hopByHop.insert(token.trimmingCharacters().lowercased())
        }
        var lines = ["\(head.method) \(path) \(head.version)"]
        if head.value(of: "Host") == nil { lines.append("Host: \(authority)") }
        for field in head.fields where !hopByHop.contains(field.name.lowercased()) {
            lines.append("\(field.name): \(field.value)")
        }
        lines.append("Connection: close")
        return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    static func failureResponse(_ failure: OpenFailure) -> [UInt8] {
        switch failure {
        case .unavailable: return response(503, "no carrier to the relay is up")
        case .refused(.timedOut): return response(504, "the relay's connection to the destination timed out")
        case .refused(let reason): return response(502, "the relay could not connect: \(reason)")
        }
    }

    private func respond(_ status: Int, _ why: String, extra: [String] = []) {
        Log.debug("\(peer): HTTP \(status): \(why)", "proxy")
        _ = writeNow(Self.response(status, why, extra: extra))
        close(reset: false, why: nil)
    }

    static func response(_ status: Int, _ text: String, extra: [String] = []) -> [UInt8] {
        let reasons = [400: "Bad Request", 407: "Proxy Authentication Required", 431: "Request Header Fields Too Large",
                       502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported"]
        let body = "sluice: \(text)\n"
        var head = ["HTTP/1.1 \(status) \(reasons[status] ?? "Error")", "Content-Type: text/plain", "Content-Length: \(body.utf8.count)",
                    "Connection: close"]
        head += extra
        return Array((head.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }
}

extension Substring {
    fileprivate func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
