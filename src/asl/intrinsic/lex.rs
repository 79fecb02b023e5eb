//! The tokens of a call, read from a cursor over its text: function names and keywords,
//! quoted strings (with their escapes and `{}` placeholders), numbers and paths. The grammar
//! that puts them together is in [`super::parse`].

use super::error::IntrinsicError;
use serde_json::Value;

/// A quoted string: its value (escapes resolved) and where its unescaped `{}` placeholders
/// start in the value (byte offsets), for `States.Format`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Quoted {
    pub value: String,
    pub holes: Vec<usize>,
}

/// A position in the text of a call.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(src: &'a str) -> Cursor<'a> {
        Cursor { src, pos: 0 }
    }

    /// The byte offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The character position (from 1) of a byte offset, for messages.
    pub fn column(&self, pos: usize) -> usize {
        self.src.get(..pos).map_or(pos, |s| s.chars().count()) + 1
    }

    /// The text not read yet.
    pub fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or_default()
    }

    pub fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    pub fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// Reads while `keep` holds; the text read.
    fn take_while(&mut self, mut keep: impl FnMut(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&mut keep) {
            self.bump();
        }
        self.src.get(start..self.pos).unwrap_or_default()
    }

    /// A name or keyword: letters, digits, `_` and `.` (e.g. `States.Format`, `true`).
    pub fn word(&mut self) -> &'a str {
        self.take_while(|c| c.is_alphanumeric() || c == '_' || c == '.')
    }

    /// A quoted string, the cursor on its opening `'`. Only `\'`, `\{`, `\}` and `\\` are
    /// escapes (AWS's reserved characters); an unescaped `{` directly followed by an
    /// unescaped `}` is a placeholder.
    pub fn quoted(&mut self) -> Result<Quoted, IntrinsicError> {
        let at = self.column(self.pos);
        self.bump();
        let mut value = String::new();
        let mut holes = Vec::new();
        let mut open: Option<usize> = None;
        loop {
            let c = self.bump().ok_or(IntrinsicError::UnclosedString { at })?;
            match c {
                '\'' => return Ok(Quoted { value, holes }),
                '\\' => {
                    let escape_at = self.column(self.pos - 1);
                    match self.bump() {
                        Some(e @ ('\'' | '\\' | '{' | '}')) => value.push(e),
                        Some(found) => {
                            return Err(IntrinsicError::BadEscape {
                                at: escape_at,
                                found,
                            })
                        }
                        None => return Err(IntrinsicError::UnclosedString { at }),
                    }
                    open = None;
                }
                '{' => {
                    open = Some(value.len());
                    value.push(c);
                }
                '}' => {
                    if let Some(o) = open.take() {
                        holes.push(o);
                    }
                    value.push(c);
                }
                _ => {
                    open = None;
                    value.push(c);
                }
            }
        }
    }

    /// A number (JSON's grammar: `-5`, `1.25`, `2e3`), the cursor on its first character.
    pub fn number(&mut self) -> Result<Value, IntrinsicError> {
        let start = self.pos;
        let mut prev = ' ';
        let text = self.take_while(|c| {
            let keep = c.is_ascii_digit()
                || matches!(c, '.' | 'e' | 'E')
                || (c == '-' && matches!(prev, ' ' | 'e' | 'E'))
                || (c == '+' && matches!(prev, 'e' | 'E'));
            prev = c;
            keep
        });
        serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_number)
            .ok_or_else(|| IntrinsicError::Syntax {
                at: self.column(start),
                message: format!(
                    "{text:?} is not a number; write numbers as JSON does, e.g. 42, -1.5 or 2e3"
                ),
            })
    }

    /// A path, the cursor on its `$`: the text up to the next `,` or `)` outside brackets,
    /// parentheses and quotes (so `$.a[?(@.b == 'x,y')]` is one path), trailing blanks
    /// dropped.
    pub fn path(&mut self) -> Result<&'a str, IntrinsicError> {
        let start = self.pos;
        let mut depth = 0usize;
        let mut quote: Option<(char, usize)> = None;
        while let Some(c) = self.peek() {
            if let Some((q, _)) = quote {
                self.bump();
                if c == '\\' {
                    self.bump();
                } else if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '\'' | '"' => quote = Some((c, self.pos)),
                '[' | '(' => depth += 1,
                ')' | ',' if depth == 0 => break,
                ']' | ')' => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.bump();
        }
        if let Some((_, at)) = quote {
            return Err(IntrinsicError::UnclosedString {
                at: self.column(at),
            });
        }
        Ok(self.src.get(start..self.pos).unwrap_or_default().trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(s: &str) -> Result<Quoted, IntrinsicError> {
        Cursor::new(s).quoted()
    }

    #[test]
    fn strings_resolve_escapes_and_find_placeholders() {
        let q = quoted(r"'a {} \{} \{\} {\} \' \\ {}'").unwrap();
        assert_eq!(q.value, r"a {} {} {} {} ' \ {}");
        // only the first and the last `{}` are placeholders
        assert_eq!(q.holes, vec![2, 18]);
        assert_eq!(
            quoted(r"'a\nb'"),
            Err(IntrinsicError::BadEscape { at: 3, found: 'n' })
        );
        assert_eq!(
            quoted("'abc"),
            Err(IntrinsicError::UnclosedString { at: 1 })
        );
        assert_eq!(
            quoted("'abc\\"),
            Err(IntrinsicError::UnclosedString { at: 1 })
        );
    }

    #[test]
    fn numbers_follow_json() {
        let n = |s: &str| Cursor::new(s).number();
        assert_eq!(n("-12, 3").unwrap(), serde_json::json!(-12));
        assert_eq!(n("1.5)").unwrap(), serde_json::json!(1.5));
        assert_eq!(n("2e3").unwrap(), serde_json::json!(2000.0));
        assert!(n("01").is_err());
        assert!(n("1.").is_err());
        assert!(n("--1").is_err());
        assert!(n("1e999").is_err());
    }

    #[test]
    fn paths_end_at_a_top_level_comma_or_paren() {
        let mut c = Cursor::new("$.a[?(@.b == 'x,y)')].c , 2)");
        assert_eq!(c.path().unwrap(), "$.a[?(@.b == 'x,y)')].c");
        assert_eq!(c.rest(), ", 2)");
        let mut c = Cursor::new("$$.Execution.Id)");
        assert_eq!(c.path().unwrap(), "$$.Execution.Id");
        let mut c = Cursor::new("$.a['it\\'s'])");
        assert_eq!(c.path().unwrap(), "$.a['it\\'s']");
        assert_eq!(
            Cursor::new("$.a['b)").path(),
            Err(IntrinsicError::UnclosedString { at: 5 })
        );
    }
}
