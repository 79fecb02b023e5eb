//! The grammar of a call: `States.Name(arg, ...)`, an argument being a quoted string, a
//! number, `true`, `false`, `null`, a path (`$...`) or another call, with blanks allowed
//! around each. Every call is checked ([`super::check`]) as soon as it is read, innermost
//! first.

use super::call::{Arg, Call};
use super::check;
use super::error::{IntrinsicError, MAX_NESTING};
use super::funcs::Template;
use super::lex::Cursor;
use super::sig::Func;
use crate::asl::path::Path;
use serde_json::Value;

/// Parses and checks the call that `src` holds, blanks around it allowed.
pub(crate) fn call(src: &str) -> Result<Call, IntrinsicError> {
    let mut p = Parser {
        cur: Cursor::new(src),
        depth: 0,
    };
    p.cur.skip_ws();
    if !p.cur.rest().starts_with("States.") {
        return Err(IntrinsicError::NotACall {
            text: src.trim().chars().take(60).collect(),
        });
    }
    let at = p.cur.pos();
    let name = p.cur.word();
    let call = p.call(name, at)?;
    p.cur.skip_ws();
    if !p.cur.rest().is_empty() {
        return Err(IntrinsicError::Trailing {
            at: p.cur.column(p.cur.pos()),
            text: p.cur.rest().chars().take(40).collect(),
        });
    }
    Ok(call)
}

struct Parser<'a> {
    cur: Cursor<'a>,
    depth: usize,
}

impl Parser<'_> {
    /// The call to `name` (already read, at byte `at`), from its `(` to its `)`.
    fn call(&mut self, name: &str, at: usize) -> Result<Call, IntrinsicError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(IntrinsicError::TooDeep {
                at: self.cur.column(at),
                limit: MAX_NESTING,
            });
        }
        let func = Func::from_name(name).ok_or_else(|| IntrinsicError::UnknownFunction {
            name: name.to_string(),
            suggestion: crate::diag::did_you_mean(name, Func::ALL.iter().map(|f| f.name())),
        })?;
        self.cur.skip_ws();
        if self.cur.peek() != Some('(') {
            return Err(self.syntax(format!(
                "expected `(` after {name}: a call is written {name}(arguments)"
            )));
        }
        self.cur.bump();
        let mut args = Vec::new();
        let mut template = None;
        self.cur.skip_ws();
        if self.cur.peek() == Some(')') {
            self.cur.bump();
        } else {
            loop {
                let (arg, t) = self.arg(func, args.len())?;
                args.push(arg);
                template = template.or(t);
                self.cur.skip_ws();
                match self.cur.bump() {
                    Some(',') => continue,
                    Some(')') => break,
                    None => return Err(unclosed(func)),
                    Some(c) => {
                        return Err(IntrinsicError::Syntax {
                            at: self.cur.column(self.cur.pos() - c.len_utf8()),
                            message: format!(
                                "expected `,` or `)` after argument {} of {name}, found `{c}`",
                                args.len()
                            ),
                        })
                    }
                }
            }
        }
        self.depth -= 1;
        let call = Call {
            func,
            args,
            template,
        };
        check::call(&call)?;
        Ok(call)
    }

    /// The argument at `index` (0-based) of a call to `func`, with the template it makes when
    /// it is `States.Format`'s literal first argument.
    fn arg(&mut self, func: Func, index: usize) -> Result<(Arg, Option<Template>), IntrinsicError> {
        self.cur.skip_ws();
        let at = self.cur.pos();
        let Some(c) = self.cur.peek() else {
            return Err(unclosed(func));
        };
        let arg = match c {
            '\'' => {
                let q = self.cur.quoted()?;
                let template = (func == Func::Format && index == 0)
                    .then(|| Template::new(q.value.clone(), q.holes));
                return Ok((Arg::Literal(Value::String(q.value)), template));
            }
            '$' => {
                let text = self.cur.path()?;
                let path = Path::compile(text).map_err(|error| IntrinsicError::BadPath {
                    function: func.name(),
                    index: index + 1,
                    error,
                })?;
                Arg::Path(path)
            }
            '-' | '0'..='9' => Arg::Literal(self.cur.number()?),
            c if c.is_alphabetic() || c == '_' => {
                let word = self.cur.word();
                match word {
                    "true" => Arg::Literal(Value::Bool(true)),
                    "false" => Arg::Literal(Value::Bool(false)),
                    "null" => Arg::Literal(Value::Null),
                    _ => {
                        self.cur.skip_ws();
                        if self.cur.peek() != Some('(') {
                            return Err(IntrinsicError::Syntax {
                                at: self.cur.column(at),
                                message: format!(
                                    "`{word}` is not a value: quote strings ('{word}'), start \
                                     paths with `$` ($.{word}), or call a function \
                                     (States.Name(...))"
                                ),
                            });
                        }
                        Arg::Call(Box::new(self.call(word, at)?))
                    }
                }
            }
            ',' | ')' => {
                return Err(self.syntax(format!(
                    "argument {} of {} is missing: remove the extra `,` or write an argument",
                    index + 1,
                    func.name()
                )))
            }
            c => {
                return Err(self.syntax(format!(
                    "`{c}` cannot start an argument: an argument is a 'string', a number, true, \
                     false, null, a path ($...) or a call (States.Name(...))"
                )))
            }
        };
        Ok((arg, None))
    }

    /// A syntax error at the cursor.
    fn syntax(&self, message: String) -> IntrinsicError {
        IntrinsicError::Syntax {
            at: self.cur.column(self.cur.pos()),
            message,
        }
    }
}

fn unclosed(func: Func) -> IntrinsicError {
    IntrinsicError::Unclosed {
        function: func.name().to_string(),
    }
}
