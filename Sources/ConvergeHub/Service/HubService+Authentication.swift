import Converge

/// The outcome of checking a request's bearer token.
enum Authentication {
    case account(AccountID)
    /// The response to refuse the request with (`401`, or `503` if tokens cannot be read).
    case refused(HTTPResponse)
}

extension HubService {
    /// The account of the request's bearer token, or the `401` (or `503`) to answer.
    ///
    /// Tokens are looked up by their SHA-256, so neither the cache nor the database holds
    /// a token, and the time a lookup takes says nothing about any stored token's bytes.
    func authenticate(_ head: HTTPRequestHead) -> Authentication {
        let challenge = [("WWW-Authenticate", "Bearer realm=\"converge-hub\"")]
        guard let field = head.headers["authorization"] else {
            return .refused(.text(.unauthorized, "send Authorization: Bearer TOKEN (converge-hub token create makes one)",
                                  headers: challenge, rejection: "unauthorized"))
        }
        let parts = field.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .refused(.text(.unauthorized, "the Authorization field must be: Bearer TOKEN", headers: challenge, rejection: "unauthorized"))
        }
        let token = String(parts[1].trimmingSpaces)
        guard BearerToken.isWellFormed(token) else {
            return .refused(.text(.unauthorized, "invalid token", headers: challenge, rejection: "unauthorized"))
        }
        let hash = BearerToken.hash(token)
        if let account = tokens.withLock({ $0[hash] }) { return .account(account) }
        do {
            guard let account = try store.account(forTokenHash: hash) else {
                return .refused(.text(.unauthorized, "invalid token", headers: challenge, rejection: "unauthorized"))
            }
            tokens.withLock { cache in
                if cache.count >= Self.maximumCachedTokens { cache.removeAll() }
                cache[hash] = account
            }
            return .account(account)
        } catch {
            // The detail (which may name the database) goes to the log, not to a client
            // that has not yet shown a valid token.
            var refusal = HTTPResponse.text(.serviceUnavailable, "the hub cannot read its tokens now; retry later",
                                            headers: [("Retry-After", "1")], rejection: "storage")
            refusal.logFields = [("error", "\(error)")]
            return .refused(refusal)
        }
    }

    /// Makes a new token for `account`, stores its hash, and returns the token (shown
    /// once: only the hash is kept).
    public static func createToken(for account: AccountID, in store: any HubStateStore,
                                   nowMilliseconds: UInt64) throws(HubError) -> String {
        let token = try BearerToken.generate()
        try store.addToken(hash: BearerToken.hash(token), account: account, createdMilliseconds: nowMilliseconds)
        return token
    }
}
