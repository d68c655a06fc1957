import Foundation
import KlaxonApp
import Testing

@Suite("site: in klaxon.yaml")
struct SiteConfigTests {
    @Test("defaults: on, a refresh a minute, the machine's zone, a random key per start")
    func defaults() throws {
        let scratch = try Scratch()
        let path = try scratch.write("klaxon.yaml", "database: k.sqlite\n")
        let config = try Config.load(path: path)
        #expect(config.site.enabled)
        #expect(config.site.refresh == 60)
        #expect(config.site.secret == nil)
    }

    @Test("every key read; the secret from a file, never printed")
    func keys() throws {
        let scratch = try Scratch()
        _ = try scratch.write("site.key", String(repeating: "k", count: 40) + "\n")
        let path = try scratch.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            site:
              enabled: false
              refresh: 5m
              time_zone: America/Chicago
              secret_file: site.key
            """)
        let config = try Config.load(path: path)
        #expect(!config.site.enabled)
        #expect(config.site.refresh == 300)
        #expect(config.site.timeZone.identifier == "America/Chicago")
        #expect(config.site.secret?.value == String(repeating: "k", count: 40))
        #expect("\(config.site.secret!)" == "<secret>")
    }

    @Test("wrong values are errors at their place")
    func errors() throws {
        let scratch = try Scratch()
        let path = try scratch.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            site:
              refresh: 2s
              time_zone: Mars/Olympus
              secret: too-short-to-sign-anything
              colour: red
            """)
        #expect {
            try Config.load(path: path)
        } throws: { error in
            let text = "\(error)"
            return text.contains(":3:12: error: site.refresh must be 0 (off) or between 5s and 24h")
                && text.contains(":4:14: error: site.time_zone: unknown time zone \"Mars/Olympus\"")
                && text.contains(":5:11: error: site.secret must be at least 32 characters")
                && text.contains(":6:3: error: unknown key \"colour\" in site")
                && !text.contains("too-short-to-sign-anything")
        }
    }
}
