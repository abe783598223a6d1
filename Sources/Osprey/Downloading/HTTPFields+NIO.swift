import HTTPTypes
import NIOHTTP1

// The public API speaks swift-http-types' `HTTPFields` (as Hummingbird does), so a caller names headers without
// depending on swift-nio; the HTTP client underneath speaks NIO's `HTTPHeaders`. These convert at that one boundary.

extension HTTPFields {
    /// NIO's headers as fields, in order; a name HTTP does not allow (the client has refused such a response before
    /// this sees it) is left out.
    init(_ headers: HTTPHeaders) {
        self.init()
        reserveCapacity(headers.count)
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { append(HTTPField(name: name, value: value)) }
        }
    }
}

extension HTTPHeaders {
    /// `fields` as NIO's headers, in order, but for `Cookie`: `HTTPFields` keeps each cookie as a field of its own
    /// (as HTTP/2 may send them), where HTTP/1.1 allows one `Cookie` header, so they are joined into one, last.
    init(_ fields: HTTPFields) {
        self.init()
        reserveCapacity(fields.count)
        var cookies: [String] = []
        for field in fields {
            if field.name == .cookie {
                cookies.append(field.value)
            } else {
                add(name: field.name.rawName, value: field.value)
            }
        }
        if !cookies.isEmpty { add(name: "Cookie", value: cookies.joined(separator: "; ")) }
    }
}
