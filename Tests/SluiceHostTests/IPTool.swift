import Foundation
import XCTest

/// Runs iproute2's `ip` to inspect (and, for fixtures, to prepare) the test namespace. Only tests
/// do this; the module itself speaks netlink.
enum IPTool {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let path = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs `ip args...`; throws with its stderr if it exits non-zero.
    @discardableResult
    static func run(_ args: String...) throws -> String {
        try run(args)
    }

    @discardableResult
    static func run(_ args: [String]) throws -> String {
        guard let path else { throw XCTSkip("iproute2 `ip` is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = args
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ip \(args.joined(separator: " ")): \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Runs `ip -j args...` and returns the JSON array of objects it prints.
    static func json(_ args: String...) throws -> [[String: Any]] {
        let text = try run(["-j"] + args)
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return [] }
        guard let array = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else {
            throw Failure(description: "ip -j \(args.joined(separator: " ")) did not print a JSON array: \(text)")
        }
        return array
    }

    /// Interface names in the namespace.
    static func linkNames() throws -> [String] {
        try json("link", "show").compactMap { $0["ifname"] as? String }
    }

    /// `address/prefixlen` of every address on `device`, with its flags; IPv6 link-local addresses,
    /// which the kernel adds by itself when the link comes up, are left out.
    static func addresses(_ device: String) throws -> [(text: String, info: [String: Any])] {
        try json("addr", "show", "dev", device).flatMap { ($0["addr_info"] as? [[String: Any]]) ?? [] }.compactMap { info in
            guard let local = info["local"] as? String, let length = info["prefixlen"] as? Int, info["scope"] as? String != "link" else { return nil }
            return ("\(local)/\(length)", info)
        }
    }

    /// `dst dev` of every route in `table` for `family` ("-4" or "-6"), `default` spelled out.
    static func routes(_ family: String, table: UInt32) throws -> [String] {
        try json(family, "route", "show", "table", String(table)).map { route in
            "\(route["dst"] as? String ?? "?") dev \(route["dev"] as? String ?? "?")"
        }
    }

    /// Rules of `family` ("-4" or "-6") as `priority: [not ]fwmark M lookup T` / `priority: lookup T`.
    static func rules(_ family: String) throws -> [String] {
        try json(family, "rule", "show").map { rule in
            var text = "\(rule["priority"] as? Int ?? -1): "
            if rule["not"] != nil { text += "not " }
            if let mark = rule["fwmark"] as? String { text += "fwmark \(mark) " }
            if let proto = rule["ipproto"] { text += "ipproto \(proto) " }
            if let port = rule["dport"] { text += "dport \(port) " }
            let table = rule["table"].map { "\($0)" } ?? "?"
            return text + "lookup \(table)"
        }
    }
}
