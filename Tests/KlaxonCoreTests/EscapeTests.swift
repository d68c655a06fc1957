import Foundation
import KlaxonCore
import Testing

/// `Escape`: one table per destination. The expectations below are what each destination wrote
/// before the tables replaced the separate escape loops (checked then, byte for byte, against the
/// old loops on every scalar and on random text); they pin that no table drifts.
@Suite("one escaper, a table per destination")
struct EscapeTests {
    /// Controls (C0, DEL, ESC sequences, C1), line breaks, bidirectional overrides and isolates,
    /// separators, format characters, invalid UTF-8 (repaired to U+FFFD) and XML's noncharacters,
    /// quotes, markup, Slack's mentions and links, Markdown links, URL specials.
    static let hostile: [String] = [
        "",
        "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
        "a\u{0}b\u{7}c\u{8}\u{B}\u{C}\u{1F}\u{7F}",
        "\u{1B}[2J\u{1B}]0;t\u{7}",
        "x\ny\r\nz\tq",
        "\u{85}\u{9B}31m",
        "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
        "\u{2028}\u{2029}",
        "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
        // Invalid UTF-8 (a stray byte, an overlong form, a surrogate) is repaired to U+FFFD when a
        // String is made of it; U+FFFE and U+FFFF are XML's noncharacters.
        String(decoding: [0x41, 0xFF, 0xC0, 0x80, 0xED, 0xA0, 0x80], as: UTF8.self) + "\u{FFFE}\u{FFFF}",
        "\"it's\" \\ `tick` a=b",
        "<script>x</script> &amp; &#x27;",
        "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
        "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
        "https://h.example:8/p[1] x?q=<y>|z{}^",
    ]

    static let expected: [(String, Escape, [String])] = [
        (
            "html", .html,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{0}b\u{7}c\u{8}\u{B}\u{C}\u{1F}\u{7F}",
                "\u{1B}[2J\u{1B}]0;t\u{7}",
                "x\ny\r\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "&quot;it&#39;s&quot; \\ `tick` a=b",
                "&lt;script&gt;x&lt;/script&gt; &amp;amp; &amp;#x27;",
                "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|Ack here&gt; @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=&lt;y&gt;|z{}^",
            ]
        ),
        (
            "svg", .svg,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{FFFD}b\u{FFFD}c\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{7F}",
                "\u{FFFD}[2J\u{FFFD}]0;t\u{FFFD}",
                "x\ny\r\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}",
                "&quot;it&#39;s&quot; \\ `tick` a=b",
                "&lt;script&gt;x&lt;/script&gt; &amp;amp; &amp;#x27;",
                "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|Ack here&gt; @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=&lt;y&gt;|z{}^",
            ]
        ),
        (
            "xmlText", .xmlText,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{FFFD}b\u{FFFD}c\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{7F}",
                "\u{FFFD}[2J\u{FFFD}]0;t\u{FFFD}",
                "x\ny&#xD;\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}",
                "&#34;it&#39;s&#34; \\ `tick` a=b",
                "&lt;script&gt;x&lt;/script&gt; &amp;amp; &amp;#x27;",
                "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|Ack here&gt; @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=&lt;y&gt;|z{}^",
            ]
        ),
        (
            "xmlAttribute", .xmlAttribute,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{FFFD}b\u{FFFD}c\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{7F}",
                "\u{FFFD}[2J\u{FFFD}]0;t\u{FFFD}",
                "x&#xA;y&#xD;&#xA;z&#x9;q",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}",
                "&#34;it&#39;s&#34; \\ `tick` a=b",
                "&lt;script&gt;x&lt;/script&gt; &amp;amp; &amp;#x27;",
                "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|Ack here&gt; @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=&lt;y&gt;|z{}^",
            ]
        ),
        (
            "json", .json,
            [
                "\"\"",
                "\"Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}\"",
                "\"a\\u0000b\\u0007c\\u0008\\u000b\\u000c\\u001f\u{7F}\"",
                "\"\\u001b[2J\\u001b]0;t\\u0007\"",
                "\"x\\ny\\r\\nz\\tq\"",
                "\"\u{85}\u{9B}31m\"",
                "\"\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}\"",
                "\"\u{2028}\u{2029}\"",
                "\"\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}\"",
                "\"A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}\"",
                "\"\\\"it's\\\" \\\\ `tick` a=b\"",
                "\"<script>x</script> &amp; &#x27;\"",
                "\"<!channel> <@U123> <https://evil|Ack here> @everyone @here\"",
                "\"[Ack here](https://evil) [x][ref] *b* _i_ ~s~\"",
                "\"https://h.example:8/p[1] x?q=<y>|z{}^\"",
            ]
        ),
        (
            "jsonLog", .jsonLog,
            [
                "\"\"",
                "\"Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}\"",
                "\"a\\u0000b\\u0007c\\u0008\\u000b\\u000c\\u001f\\u007f\"",
                "\"\\u001b[2J\\u001b]0;t\\u0007\"",
                "\"x\\ny\\r\\nz\\tq\"",
                "\"\\u0085\\u009b31m\"",
                "\"\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}\"",
                "\"\u{2028}\u{2029}\"",
                "\"\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}\"",
                "\"A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}\"",
                "\"\\\"it's\\\" \\\\ `tick` a=b\"",
                "\"<script>x</script> &amp; &#x27;\"",
                "\"<!channel> <@U123> <https://evil|Ack here> @everyone @here\"",
                "\"[Ack here](https://evil) [x][ref] *b* _i_ ~s~\"",
                "\"https://h.example:8/p[1] x?q=<y>|z{}^\"",
            ]
        ),
        (
            "logfmtKey", .logfmtKey,
            [
                "",
                "Müller’s_gauge_\u{65E5}\u{672C}_\u{1F6A8}",
                "a_b_c_____",
                "_[2J_]0;t_",
                "x_y__z_q",
                "__31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "__",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "_it's__\\_`tick`_a_b",
                "<script>x</script>_&amp;_&#x27;",
                "<!channel>_<@U123>_<https://evil|Ack_here>_@everyone_@here",
                "[Ack_here](https://evil)_[x][ref]_*b*__i__~s~",
                "https://h.example:8/p[1]_x?q_<y>|z{}^",
            ]
        ),
        (
            "logfmtValue", .logfmtValue,
            [
                "\"\"",
                "\"Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}\"",
                "\"a\\u0000b\\u0007c\\u0008\\u000b\\u000c\\u001f\\u007f\"",
                "\"\\u001b[2J\\u001b]0;t\\u0007\"",
                "\"x\\ny\\r\\nz\\tq\"",
                "\"\\u0085\\u009b31m\"",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\"\\u2028\\u2029\"",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"\\\"it's\\\" \\\\ `tick` a=b\"",
                "\"<script>x</script> &amp; &#x27;\"",
                "\"<!channel> <@U123> <https://evil|Ack here> @everyone @here\"",
                "\"[Ack here](https://evil) [x][ref] *b* _i_ ~s~\"",
                "\"https://h.example:8/p[1] x?q=<y>|z{}^\"",
            ]
        ),
        (
            "goQuoted", .goQuoted,
            [
                "\"\"",
                "\"Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}\"",
                "\"a\\x00b\\x07c\\x08\\x0b\\x0c\\x1f\\x7f\"",
                "\"\\x1b[2J\\x1b]0;t\\x07\"",
                "\"x\\ny\\r\\nz\\tq\"",
                "\"\u{85}\u{9B}31m\"",
                "\"\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}\"",
                "\"\u{2028}\u{2029}\"",
                "\"\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}\"",
                "\"A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}\"",
                "\"\\\"it's\\\" \\\\ `tick` a=b\"",
                "\"<script>x</script> &amp; &#x27;\"",
                "\"<!channel> <@U123> <https://evil|Ack here> @everyone @here\"",
                "\"[Ack here](https://evil) [x][ref] *b* _i_ ~s~\"",
                "\"https://h.example:8/p[1] x?q=<y>|z{}^\"",
            ]
        ),
        (
            "terminal", .terminal,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\\x00b\\x07c\\x08\\x0B\\x0C\\x1F\\x7F",
                "\\e[2J\\e]0;t\\x07",
                "x\\ny\\r\\nz\\tq",
                "\\x85\\x9B31m",
                "\\u{202E}abc\\u{202C}\\u{2066}\\u{2069}\\u{200E}\\u{200F}\\u{61C}",
                "\\u{2028}\\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "<script>x</script> &amp; &#x27;",
                "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=<y>|z{}^",
            ]
        ),
        (
            "controlsShown", .controlsShown,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\\u{0}b\\u{7}c\\u{8}\\u{b}\\u{c}\\u{1f}\\u{7f}",
                "\\u{1b}[2J\\u{1b}]0;t\\u{7}",
                "x\\u{a}y\\u{d}\\u{a}z\\u{9}q",
                "\\u{85}\\u{9b}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "<script>x</script> &amp; &#x27;",
                "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=<y>|z{}^",
            ]
        ),
        (
            "invisiblesShown", .invisiblesShown,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\\u{0}b\\u{7}c\\u{8}\\u{b}\\u{c}\\u{1f}\\u{7f}",
                "\\u{1b}[2J\\u{1b}]0;t\\u{7}",
                "x\\u{a}y\\u{d}\\u{a}z\\u{9}q",
                "\\u{85}\\u{9b}31m",
                "\\u{202e}abc\\u{202c}\\u{2066}\\u{2069}\\u{200e}\\u{200f}\\u{61c}",
                "\\u{2028}\\u{2029}",
                "\\u{ad}\\u{200b}\\u{200d}\\u{feff}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "<script>x</script> &amp; &#x27;",
                "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=<y>|z{}^",
            ]
        ),
        (
            "printable", .printable,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a?b?c?????",
                "?[2J?]0;t?",
                "x?y??z?q",
                "??31m",
                "?abc??????",
                "??",
                "??????",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}??",
                "\"it's\" \\ `tick` a=b",
                "<script>x</script> &amp; &#x27;",
                "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=<y>|z{}^",
            ]
        ),
        (
            "mailHeader", .mailHeader,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a b c     ",
                " [2J ]0;t ",
                "x y  z q",
                "  31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "  ",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "<script>x</script> &amp; &#x27;",
                "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=<y>|z{}^",
            ]
        ),
        (
            "slack", .slack,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{0}b\u{7}c\u{8}\u{B}\u{C}\u{1F}\u{7F}",
                "\u{1B}[2J\u{1B}]0;t\u{7}",
                "x\ny\r\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "&lt;script&gt;x&lt;/script&gt; &amp;amp; &amp;#x27;",
                "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|Ack here&gt; @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=&lt;y&gt;|z{}^",
            ]
        ),
        (
            "mattermost", .mattermost,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{0}b\u{7}c\u{8}\u{B}\u{C}\u{1F}\u{7F}",
                "\u{1B}[2J\u{1B}]\u{2060}0;t\u{7}",
                "x\ny\r\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "&lt;script&gt;x&lt;/script&gt; &amp;amp; &amp;#x27;",
                "&lt;!channel&gt; &lt;@\u{2060}U123&gt; &lt;https://evil|Ack here&gt; @\u{2060}everyone @\u{2060}here",
                "[Ack here]\u{2060}(https://evil) [x]\u{2060}[ref]\u{2060} *b* _i_ ~s~",
                "https://h.example:8/p[1]\u{2060} x?q=&lt;y&gt;|z{}^",
            ]
        ),
        (
            "discord", .discord,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{0}b\u{7}c\u{8}\u{B}\u{C}\u{1F}\u{7F}",
                "\u{1B}[2J\u{1B}]\u{2060}0;t\u{7}",
                "x\ny\r\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "<script>x</script> &amp; &#x27;",
                "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
                "[Ack here]\u{2060}(https://evil) [x]\u{2060}[ref]\u{2060} *b* _i_ ~s~",
                "https://h.example:8/p[1]\u{2060} x?q=<y>|z{}^",
            ]
        ),
        (
            "msteams", .msteams,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{0}b\u{7}c\u{8}\u{B}\u{C}\u{1F}\u{7F}",
                "\u{1B}[2J\u{1B}]\u{2060}0;t\u{7}",
                "x\ny\r\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "<script>x</script> &amp; &#x27;",
                "<!channel> <@U123> <https://evil|Ack here> @everyone @here",
                "[Ack here]\u{2060}(https://evil) [x]\u{2060}[ref]\u{2060} *b* _i_ ~s~",
                "https://h.example:8/p[1]\u{2060} x?q=<y>|z{}^",
            ]
        ),
        (
            "googlechat", .googlechat,
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\u{0}b\u{7}c\u{8}\u{B}\u{C}\u{1F}\u{7F}",
                "\u{1B}[2J\u{1B}]0;t\u{7}",
                "x\ny\r\nz\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\"it's\" \\ `tick` a=b",
                "<\u{2060}script>x<\u{2060}/script> &amp; &#x27;",
                "<\u{2060}!channel> <\u{2060}@U123> <\u{2060}https://evil|Ack here> @everyone @here",
                "[Ack here](https://evil) [x][ref] *b* _i_ ~s~",
                "https://h.example:8/p[1] x?q=<\u{2060}y>|z{}^",
            ]
        ),
        (
            "linkAuthority", .linkAuthority,
            [
                "",
                "M%C3%BCller%E2%80%99s%20gauge%20%E6%97%A5%E6%9C%AC%20%F0%9F%9A%A8",
                "a%00b%07c%08%0B%0C%1F%7F",
                "%1B[2J%1B]0;t%07",
                "x%0Ay%0D%0Az%09q",
                "%C2%85%C2%9B31m",
                "%E2%80%AEabc%E2%80%AC%E2%81%A6%E2%81%A9%E2%80%8E%E2%80%8F%D8%9C",
                "%E2%80%A8%E2%80%A9",
                "%C2%AD%E2%80%8B%E2%80%8D%EF%BB%BF%EE%80%80%CD%B8",
                "A%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BE%EF%BF%BF",
                "%22it%27s%22%20%5C%20%60tick%60%20a=b",
                "%3Cscript%3Ex%3C/script%3E%20&amp;%20&#x27;",
                "%3C!channel%3E%20%3C@U123%3E%20%3Chttps://evil%7CAck%20here%3E%20@everyone%20@here",
                "[Ack%20here]%28https://evil%29%20[x][ref]%20*b*%20_i_%20~s~",
                "https://h.example:8/p[1]%20x?q=%3Cy%3E%7Cz%7B%7D%5E",
            ]
        ),
        (
            "linkPath", .linkPath,
            [
                "",
                "M%C3%BCller%E2%80%99s%20gauge%20%E6%97%A5%E6%9C%AC%20%F0%9F%9A%A8",
                "a%00b%07c%08%0B%0C%1F%7F",
                "%1B%5B2J%1B%5D0;t%07",
                "x%0Ay%0D%0Az%09q",
                "%C2%85%C2%9B31m",
                "%E2%80%AEabc%E2%80%AC%E2%81%A6%E2%81%A9%E2%80%8E%E2%80%8F%D8%9C",
                "%E2%80%A8%E2%80%A9",
                "%C2%AD%E2%80%8B%E2%80%8D%EF%BB%BF%EE%80%80%CD%B8",
                "A%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BE%EF%BF%BF",
                "%22it%27s%22%20%5C%20%60tick%60%20a=b",
                "%3Cscript%3Ex%3C/script%3E%20&amp;%20&#x27;",
                "%3C!channel%3E%20%3C@U123%3E%20%3Chttps://evil%7CAck%20here%3E%20@everyone%20@here",
                "%5BAck%20here%5D%28https://evil%29%20%5Bx%5D%5Bref%5D%20*b*%20_i_%20~s~",
                "https://h.example:8/p%5B1%5D%20x?q=%3Cy%3E%7Cz%7B%7D%5E",
            ]
        ),
        (
            "mattermostJSON", Escape.json.unquoted.adding(.mattermost),
            [
                "",
                "Müller’s gauge \u{65E5}\u{672C} \u{1F6A8}",
                "a\\u0000b\\u0007c\\u0008\\u000b\\u000c\\u001f\u{7F}",
                "\\u001b[2J\\u001b]\u{2060}0;t\\u0007",
                "x\\ny\\r\\nz\\tq",
                "\u{85}\u{9B}31m",
                "\u{202E}abc\u{202C}\u{2066}\u{2069}\u{200E}\u{200F}\u{61C}",
                "\u{2028}\u{2029}",
                "\u{AD}\u{200B}\u{200D}\u{FEFF}\u{E000}\u{378}",
                "A\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFE}\u{FFFF}",
                "\\\"it's\\\" \\\\ `tick` a=b",
                "&lt;script&gt;x&lt;/script&gt; &amp;amp; &amp;#x27;",
                "&lt;!channel&gt; &lt;@\u{2060}U123&gt; &lt;https://evil|Ack here&gt; @\u{2060}everyone @\u{2060}here",
                "[Ack here]\u{2060}(https://evil) [x]\u{2060}[ref]\u{2060} *b* _i_ ~s~",
                "https://h.example:8/p[1]\u{2060} x?q=&lt;y&gt;|z{}^",
            ]
        ),
    ]

    @Test("each destination writes the hostile corpus as pinned")
    func pinned() {
        for (name, escape, outputs) in Self.expected {
            #expect(outputs.count == Self.hostile.count, "\(name)")
            for (input, output) in zip(Self.hostile, outputs) {
                #expect(escape(input) == output, "\(name): \(input.debugDescription)")
                var bytes: [UInt8] = [0x2A]
                escape.write(input, into: &bytes)
                #expect(bytes == [0x2A] + Array(output.utf8), "\(name) into bytes: \(input.debugDescription)")
            }
        }
    }

    @Test("the named escapers are the tables")
    func callersUseTheTables() {
        for input in Self.hostile {
            #expect(HTMLText.escape(input) == Escape.html(input))
            #expect(JSONText.string(input) == Escape.json(input))
            #expect(TerminalText.safe(input) == Escape.terminal(input))
            #expect(ChatEscape.slack(input) == Escape.slack(input))
            #expect(ChatEscape.mattermost(input) == Escape.mattermost(input))
            #expect(ChatEscape.discord(input) == Escape.discord(input))
            #expect(ChatEscape.msteams(input) == Escape.msteams(input))
            #expect(ChatEscape.googlechat(input) == Escape.googlechat(input))
            #expect(
                (TerminalText.problem(input) != nil) == input.unicodeScalars.contains(where: Escape.terminal.replaces))
        }
    }

    @Test("text that needs nothing comes back as it is, in its quotes")
    func unchanged() {
        for text in ["", "flood-stage S1 → back to normal", "Müller’s gauge, São Paulo", "🚨 日本語", "a/b"] {
            for escape in [Escape.html, .svg, .terminal, .slack, .discord, .controlsShown, .printable] {
                #expect(escape(text) == text)
            }
            #expect(Escape.json(text) == "\"" + text + "\"")
            #expect(Escape.terminal.firstReplaced(in: text) == nil)
        }
    }

    @Test("logfmt quotes only when it must, and then escapes")
    func logfmtQuoting() {
        #expect(Escape.logfmtValue("a\\b") == "a\\b")
        #expect(Escape.logfmtValue("") == "\"\"")
        #expect(Escape.logfmtValue("a b\\c") == "\"a b\\\\c\"")
        #expect(Escape.logfmtValue("x=1") == "\"x=1\"")
        #expect(Escape.logfmtValue("é\u{2028}") == "\"é\\u2028\"")
    }

    /// Tables that were chains of `replacingOccurrences`, which match whole characters: a quote or a
    /// space followed by a combining mark was one character, and was left as it was.
    @Test("matcher values, YAML scalars and runbook URLs are escaped scalar by scalar")
    func scalarByScalar() {
        #expect(Escape.matcherValue("a\\b\"c\nd\"\u{301}") == "\"a\\\\b\\\"c\\nd\\\"\u{301}\"")
        #expect(Escape.matcherValue("plain") == "\"plain\"")
        #expect(Escape.yamlQuoted("a\\b\"\u{301}") == "\"a\\\\b\\\"\u{301}\"")
        #expect(Escape.runbookURL("https://w.example/a b \u{301}é") == "https://w.example/a%20b%20%CC%81%C3%A9")
        #expect(Escape.runbookURL("https://w.example/x?y=1") == "https://w.example/x?y=1")
    }

    @Test("firstReplaced and replaces follow the table")
    func firstReplaced() {
        #expect(Escape.terminal.firstReplaced(in: "ok é \u{202E}x\u{1B}") == "\u{202E}")
        #expect(Escape.terminal.firstReplaced(in: "ok\u{1B}é\u{202E}") == "\u{1B}")
        #expect(Escape.terminal.replaces("\u{9B}"))
        #expect(!Escape.terminal.replaces("é"))
        #expect(!Escape.logfmtValue.replaces(" "))  // quotes, but is kept
    }

    /// What an escape writes (an entity, a backslash escape, a percent escape), spelled in code
    /// outside the tables, is an escape loop of its own: there is none. The demo's chat page undoes
    /// Slack's three escapes to show a message as Slack would, which is not escaping.
    @Test("no code outside the tables spells an entity or an escape")
    func oneEscaper() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let entities = [#""&amp;"#, #""&lt;"#, #""&gt;"#, #""&quot;"#, #""&#39;"#, #""&#34;"#]
        let escapes = [#""\\u"#, #""\\x"#, #""\\e""#, #""\\\\""#, #""\\\"""#, #""%%"#, #""%20""#]
        let walker = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
        var files = 0
        var found: [String] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let path = String(url.path.dropFirst(root.path.count + 1))
            guard path != "KlaxonCore/Escape+Destinations.swift" else { continue }
            files += 1
            let text = try String(contentsOf: url, encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard !line.drop(while: { $0 == " " }).hasPrefix("//") else { continue }
                let spelled = escapes + (path == "KlaxonDemo/ChatPage.swift" ? [] : entities)
                for s in spelled where line.contains(s) { found.append("\(path):\(n + 1): \(s)") }
            }
        }
        #expect(files > 100)
        #expect(found.isEmpty, "\(found)")
    }

    /// One pass over a megabyte of text that needs escaping almost everywhere, and over one that
    /// needs none: the outputs are exact (a quadratic escaper would not finish).
    @Test("a megabyte escapes in one pass")
    func megabyte() {
        let unit = "<&\u{1B}é\u{202E}x\""
        let n = (1 << 20) / unit.utf8.count + 1
        let input = String(repeating: unit, count: n)
        #expect(input.utf8.count >= 1 << 20)
        #expect(Escape.html(input) == String(repeating: "&lt;&amp;\u{1B}é\u{202E}x&quot;", count: n))
        #expect(Escape.terminal(input) == String(repeating: "<&\\eé\\u{202E}x\"", count: n))
        #expect(Escape.json(input) == "\"" + String(repeating: "<&\\u001bé\u{202E}x\\\"", count: n) + "\"")
        #expect(Escape.logfmtValue(input) == "\"" + String(repeating: "<&\\u001bé\u{202E}x\\\"", count: n) + "\"")
        #expect(Escape.mattermost(input) == String(repeating: "&lt;&amp;\u{1B}é\u{202E}x\"", count: n))
        let plain = String(repeating: "river gauge é 日本 ", count: (1 << 20) / 24)
        #expect(Escape.json(plain) == "\"" + plain + "\"")
        #expect(Escape.terminal(plain) == plain)
    }
}
