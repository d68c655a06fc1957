import Foundation
import KlaxonDelivery
import Testing

/// Template names are a closed set: a typo is an error with where it is and what was meant.
@Suite struct TemplateCheckTests {
    @Test func aTypoInARuleMessageSaysWhereAndWhatWasMeant() {
        let problems = TemplateCheck.checkMessage("{{station}} at {{levle}}\n{{#firing}}{{statoin}}{{/firing}}")
        #expect(
            problems.map(\.description) == [
                "line 1, column 16: unknown variable {{levle}}; did you mean {{level}}?",
                "line 2, column 12: unknown variable {{statoin}}; did you mean {{station}}?",
            ])
    }

    @Test("two letters swapped are one edit: {{vaule}} means {{value}}, not {{rule}} (issue 39)")
    func aSwapIsOneEdit() {
        #expect(
            TemplateCheck.checkMessage("{{vaule}}").map(\.message) == [
                "unknown variable {{vaule}}; did you mean {{value}}?"
            ])
    }

    @Test func whatAMessageMayUse() {
        for ok in [
            "{{rule}} {{station}} {{value}} {{unit}} {{labels.team}} {{{summary}}} {{& explanation}}",
            "{{#resolved}}back{{/resolved}}{{^resolved}}{{level}}{{/resolved}} {{! a comment {{nope}} }}",
            "{{#labels}}{{team}}{{/labels}}", "plain text, no tags", "{{uppercased(station)}}",
        ] {
            #expect(TemplateCheck.checkMessage(ok).isEmpty, "\(ok)")
        }
    }

    @Test func aReceiverTemplateSeesTheAlertsOnlyInsideTheirSection() {
        #expect(
            TemplateCheck.checkReceiver(#"{"text": "{{#alerts}}{{title}} {{url}} {{receiver}}{{/alerts}}"}"#).isEmpty)
        let outside = TemplateCheck.checkReceiver(#"{"text": "{{title}}"}"#)
        #expect(
            outside.map(\.message) == ["unknown variable {{title}} (it is set only inside {{#alerts}}…{{/alerts}})"])
        let typo = TemplateCheck.checkReceiver("{{#alert}}{{/alert}}")
        #expect(typo.first?.message == "unknown variable {{alert}}; did you mean {{alerts}}?")
    }

    @Test func hostileTemplatesEndTheScanCleanly() {
        for text in ["{{", "{{{", "}}", "{{#", "{{/}}", String(repeating: "{{a", count: 5_000), "{{=<% %>=}}<%nope%>"] {
            _ = TemplateCheck.checkMessage(text)
        }
        #expect(TemplateCheck.checkMessage("{{=<% %>=}}<%nope%>").isEmpty, "not followed past a delimiter change")
    }

    @Test func syntaxErrorsInWords() {
        #expect {
            _ = try MessageRenderer.compile("{{#firing}}open", origin: "message", escaping: .text)
        } throws: { error in
            "\(error)".contains("is not closed by {{/name}}")
        }
    }
}
