import Foundation
import Hummingbird
import Testing

@testable import KlaxonServer

/// Both form readers go through Hummingbird's `URLEncodedFormDecoder` (issue 40): the site's with its
/// strict rules on top (same refusals as its own parser had), chat's as leniently as Slack and
/// Mattermost need.
@Suite("Form decoding")
struct FormDecodingTests {
    static let allowed: Set<String> = ["token", "name", "next"]

    static func site(_ body: String) -> Result<[String: String], SiteForm.Problem> {
        SiteForm.parse(Array(body.utf8), allowed: allowed).map(\.fields)
    }

    @Test("the site's form: fields decoded, + is a space, an empty form is empty")
    func siteAccepts() throws {
        #expect(
            try Self.site("token=a%2Bb&name=Ann+Lee&next=%2Falerts%3Fx%3D1").get() == [
                "token": "a+b", "name": "Ann Lee", "next": "/alerts?x=1",
            ])
        #expect(try Self.site("").get() == [:])
        #expect(try Self.site("name=").get() == ["name": ""])
        #expect(try Self.site("name=a=b").get() == ["name": "a=b"])
        #expect(try Self.site("name=%C3%A9t%C3%A9").get() == ["name": "été"])
    }

    @Test("the site's form: its strict rules refuse what the decoder alone would let through")
    func siteRefuses() {
        let malformed = "The form is malformed (expected NAME=VALUE pairs joined by &)."
        let cases: [(String, String)] = [
            ("name", malformed),
            ("name=a&", malformed),
            ("name=a&&next=b", malformed),
            ("name=%", malformed),
            ("name=%zz", malformed),
            ("name=%FF", malformed),
            ("na%E9me=x", malformed),
            ("name[x]=a", malformed),
            ("name[]=a", malformed),
            ("name=a&name=b", "The form repeats the field \"name\"."),
            ("evil=1", "The form has an unexpected field \"evil\"."),
            ("name=" + String(repeating: "x", count: 1025), "The field \"name\" is longer than 1024 characters."),
            ("name=a%0Ab", "The field \"name\" has control characters."),
            ("name=a%7Fb", "The field \"name\" has control characters."),
        ]
        for (body, says) in cases {
            switch Self.site(body) {
            case .success(let fields): Issue.record("\(body.prefix(60)) accepted: \(fields)")
            case .failure(let problem): #expect(problem.message == says, "\(body.prefix(60))")
            }
        }
        let notUTF8 = SiteForm.parse([0x6E, 0x3D, 0xFF], allowed: Self.allowed)
        #expect((try? notUTF8.get()) == nil)
        let tooLarge = SiteForm.parse(Array(repeating: 0x61, count: SiteForm.maxBytes + 1), allowed: Self.allowed)
        if case .failure(let p) = tooLarge { #expect(p.status == .contentTooLarge) } else { Issue.record("accepted") }
    }

    @Test("chat's form: Slack's and Mattermost's fields, + a space, a bare name skipped; a broken form names nobody")
    func chat() {
        let form = ChatEndpoints.parseForm(
            "token=t&team_id=T1&user_id=U1&user_name=ann&command=%2Fklaxon&text=ack+42+%3Cnow%3E&flag&&")
        #expect(
            form == [
                "token": "t", "team_id": "T1", "user_id": "U1", "user_name": "ann", "command": "/klaxon",
                "text": "ack 42 <now>",
            ])
        #expect(ChatEndpoints.parseForm("") == [:])
        // A repeated field or broken percent-encoding: nothing is taken from it (Slack and
        // Mattermost send neither), so the request names no user and is refused.
        #expect(ChatEndpoints.parseForm("user_id=U1&user_id=U2") == [:])
        #expect(ChatEndpoints.parseForm("user_id=U1&text=%zz") == [:])
    }
}
