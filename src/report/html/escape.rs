//! Text into HTML: everything a page shows that came from outside pace's
//! own literals (URLs, error causes, file names, a script's strings) goes
//! through [`escape`], in element content and in attribute values alike.

/// `text` with `& < > " '` replaced by entities, safe between tags and
/// inside quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            escape(r#"<script>alert("x&y")</script>"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;"
        );
        assert_eq!(escape("it's"), "it&#39;s");
        assert_eq!(escape("http://h/ä?a=1"), "http://h/ä?a=1");
        // Already escaped text is escaped again: it is shown as typed.
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }
}
