//! A small Rust tokenizer for attribute text.
//!
//! The extractor records each attribute as rustc's pretty printer renders it
//! (`#[klint::preempt_count(adjust = 1, expect = 0..)]`). klint parses the
//! attribute's *token trees*, so we rebuild token trees from the text: the
//! same tokens rustc would produce for the handful of forms an attribute
//! argument can take (identifiers, integer/float/string literals, the
//! punctuation that matters: `,` `=` `-` `..` `..=` `::`, and delimited
//! groups). Anything else becomes a token that the parsers reject with
//! klint's error. It never panics and never recurses on input, so any
//! string is safe to feed it.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tree {
    Tok(Tok),
    Group(Delim, Vec<Tree>),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Delim {
    Paren,
    Bracket,
    Brace,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier or keyword (`r#` stripped from raw identifiers).
    Ident(String),
    /// An integer literal. `value` is `None` when the digits are invalid for
    /// the radix or do not fit in `u128` (rustc would have rejected it).
    Int {
        value: Option<u128>,
        suffix: Option<String>,
    },
    Float,
    /// A string literal (plain or raw), with its value unescaped.
    Str(String),
    /// Byte/C strings, chars, byte chars: never valid in our attributes.
    OtherLit,
    Lifetime,
    Punct(Punct),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Punct {
    Comma,
    Eq,
    Minus,
    DotDot,
    DotDotEq,
    Pound,
    Not,
    PathSep,
    /// Any other operator, kept whole (`==` must not read as `=`).
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TokenError(pub String);

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Groups nest at most this deep: rustc's own output never comes close, and
/// the bound keeps drop of a hostile `((((…` from recursing without limit.
const MAX_DEPTH: usize = 64;

/// Multi-character operators, longest first, so that greedy matching
/// produces rustc's tokens.
const OPERATORS: &[(&str, Punct)] = &[
    ("..=", Punct::DotDotEq),
    ("...", Punct::Other),
    ("<<=", Punct::Other),
    (">>=", Punct::Other),
    ("..", Punct::DotDot),
    ("::", Punct::PathSep),
    ("==", Punct::Other),
    ("!=", Punct::Other),
    ("<=", Punct::Other),
    (">=", Punct::Other),
    ("=>", Punct::Other),
    ("->", Punct::Other),
    ("<-", Punct::Other),
    ("&&", Punct::Other),
    ("||", Punct::Other),
    ("+=", Punct::Other),
    ("-=", Punct::Other),
    ("*=", Punct::Other),
    ("/=", Punct::Other),
    ("%=", Punct::Other),
    ("^=", Punct::Other),
    ("&=", Punct::Other),
    ("|=", Punct::Other),
    ("<<", Punct::Other),
    (">>", Punct::Other),
    (",", Punct::Comma),
    ("=", Punct::Eq),
    ("-", Punct::Minus),
    ("#", Punct::Pound),
    ("!", Punct::Not),
];

pub(crate) fn tokenize(text: &str) -> Result<Vec<Tree>, TokenError> {
    let chars: Vec<char> = text.chars().collect();
    let mut lexer = Lexer { chars, pos: 0 };
    // Open groups, innermost last; the bottom entry is the top level.
    let mut stack: Vec<(Option<Delim>, Vec<Tree>)> = vec![(None, Vec::new())];
    while let Some(item) = lexer.next_item()? {
        match item {
            Item::Open(delim) => {
                if stack.len() > MAX_DEPTH {
                    return Err(TokenError("delimiters nest too deeply".into()));
                }
                stack.push((Some(delim), Vec::new()));
            }
            Item::Close(delim) => {
                let Some((Some(open), trees)) = stack.pop() else {
                    return Err(TokenError(format!(
                        "unexpected closing delimiter `{}`",
                        close_char(delim)
                    )));
                };
                if open != delim {
                    return Err(TokenError(format!(
                        "mismatched closing delimiter `{}`",
                        close_char(delim)
                    )));
                }
                if let Some((_, parent)) = stack.last_mut() {
                    parent.push(Tree::Group(delim, trees));
                }
            }
            Item::Tok(tok) => {
                if let Some((_, current)) = stack.last_mut() {
                    current.push(Tree::Tok(tok));
                }
            }
        }
    }
    match stack.pop() {
        Some((None, trees)) if stack.is_empty() => Ok(trees),
        Some((Some(delim), _)) => Err(TokenError(format!(
            "unclosed delimiter, `{}` expected",
            close_char(delim)
        ))),
        _ => Err(TokenError("unbalanced delimiters".into())),
    }
}

fn close_char(delim: Delim) -> char {
    match delim {
        Delim::Paren => ')',
        Delim::Bracket => ']',
        Delim::Brace => '}',
    }
}

enum Item {
    Open(Delim),
    Close(Delim),
    Tok(Tok),
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer {
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn peek(&self) -> Option<char> {
        self.peek_at(0)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(i) == Some(c))
    }

    fn skip_trivia(&mut self) -> Result<(), TokenError> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => self.pos += 1,
                Some('/') if self.peek_at(1) == Some('/') => {
                    while self.bump().is_some_and(|c| c != '\n') {}
                }
                Some('/') if self.peek_at(1) == Some('*') => {
                    self.pos += 2;
                    let mut depth = 1usize;
                    while depth > 0 {
                        if self.starts_with("/*") {
                            depth += 1;
                            self.pos += 2;
                        } else if self.starts_with("*/") {
                            depth -= 1;
                            self.pos += 2;
                        } else if self.bump().is_none() {
                            return Err(TokenError("unterminated block comment".into()));
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn next_item(&mut self) -> Result<Option<Item>, TokenError> {
        self.skip_trivia()?;
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        let item = match c {
            '(' | '[' | '{' => {
                self.pos += 1;
                Item::Open(match c {
                    '(' => Delim::Paren,
                    '[' => Delim::Bracket,
                    _ => Delim::Brace,
                })
            }
            ')' | ']' | '}' => {
                self.pos += 1;
                Item::Close(match c {
                    ')' => Delim::Paren,
                    ']' => Delim::Bracket,
                    _ => Delim::Brace,
                })
            }
            '"' => {
                self.pos += 1;
                Item::Tok(Tok::Str(self.cooked_string()?))
            }
            '\'' => Item::Tok(self.quote()?),
            c if c.is_ascii_digit() => Item::Tok(self.number()),
            c if is_ident_start(c) => Item::Tok(self.ident_or_prefixed_literal()?),
            _ => Item::Tok(Tok::Punct(self.punct())),
        };
        Ok(Some(item))
    }

    fn punct(&mut self) -> Punct {
        for (op, punct) in OPERATORS {
            if self.starts_with(op) {
                self.pos += op.chars().count();
                return *punct;
            }
        }
        self.pos += 1;
        Punct::Other
    }

    fn ident_text(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(is_ident_continue) {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    fn ident_or_prefixed_literal(&mut self) -> Result<Tok, TokenError> {
        // Raw identifiers and raw/byte/C string prefixes.
        if self.starts_with("r#") && self.peek_at(2).is_some_and(is_ident_start) {
            self.pos += 2;
            return Ok(Tok::Ident(self.ident_text()));
        }
        for (prefix, cooked) in [("br", false), ("cr", false), ("r", true)] {
            if self.starts_with(prefix) {
                let after = self.chars.get(self.pos + prefix.len()).copied();
                if matches!(after, Some('"' | '#')) {
                    self.pos += prefix.len();
                    let value = self.raw_string()?;
                    return Ok(if cooked {
                        Tok::Str(value)
                    } else {
                        Tok::OtherLit
                    });
                }
            }
        }
        for prefix in ["b", "c"] {
            if self.starts_with(prefix) {
                match self.peek_at(1) {
                    Some('"') => {
                        self.pos += 2;
                        self.cooked_string()?;
                        return Ok(Tok::OtherLit);
                    }
                    Some('\'') if prefix == "b" => {
                        self.pos += 1;
                        self.quote()?;
                        return Ok(Tok::OtherLit);
                    }
                    _ => {}
                }
            }
        }
        Ok(Tok::Ident(self.ident_text()))
    }

    /// The body of a `"…"` string after the opening quote, unescaped.
    fn cooked_string(&mut self) -> Result<String, TokenError> {
        let mut value = String::new();
        loop {
            match self.bump() {
                None => return Err(TokenError("unterminated string literal".into())),
                Some('"') => return Ok(value),
                Some('\\') => {
                    if let Some(c) = self.escape()? {
                        value.push(c);
                    }
                }
                Some(c) => value.push(c),
            }
        }
    }

    /// One escape after a `\`; `None` for a line continuation.
    fn escape(&mut self) -> Result<Option<char>, TokenError> {
        let bad = || TokenError("invalid escape in literal".into());
        let c = match self.bump().ok_or_else(bad)? {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            '\\' => '\\',
            '0' => '\0',
            '\'' => '\'',
            '"' => '"',
            'x' => {
                let hi = self.bump().and_then(|c| c.to_digit(16)).ok_or_else(bad)?;
                let lo = self.bump().and_then(|c| c.to_digit(16)).ok_or_else(bad)?;
                char::from_u32(hi * 16 + lo).ok_or_else(bad)?
            }
            'u' => {
                if self.bump() != Some('{') {
                    return Err(bad());
                }
                let mut code: u32 = 0;
                let mut digits = 0;
                loop {
                    match self.bump() {
                        Some('}') if digits > 0 => break,
                        Some('_') => {}
                        Some(c) if c.is_ascii_hexdigit() && digits < 6 => {
                            code = code * 16 + c.to_digit(16).ok_or_else(bad)?;
                            digits += 1;
                        }
                        _ => return Err(bad()),
                    }
                }
                char::from_u32(code).ok_or_else(bad)?
            }
            '\n' => {
                while self.peek().is_some_and(char::is_whitespace) {
                    self.pos += 1;
                }
                return Ok(None);
            }
            _ => return Err(bad()),
        };
        Ok(Some(c))
    }

    /// `#…#"…"#…#` after the `r` prefix.
    fn raw_string(&mut self) -> Result<String, TokenError> {
        let mut hashes = 0usize;
        while self.peek() == Some('#') {
            hashes += 1;
            self.pos += 1;
        }
        if self.bump() != Some('"') {
            return Err(TokenError("invalid raw string literal".into()));
        }
        let mut value = String::new();
        loop {
            match self.bump() {
                None => return Err(TokenError("unterminated raw string literal".into())),
                Some('"') if (0..hashes).all(|i| self.peek_at(i) == Some('#')) => {
                    self.pos += hashes;
                    return Ok(value);
                }
                Some(c) => value.push(c),
            }
        }
    }

    /// A char literal (`'a'`, `'\n'`) or a lifetime (`'a`), at the quote.
    fn quote(&mut self) -> Result<Tok, TokenError> {
        self.pos += 1;
        match (self.peek(), self.peek_at(1)) {
            (Some('\\'), _) => {
                self.pos += 1;
                self.escape()?;
                if self.bump() != Some('\'') {
                    return Err(TokenError("unterminated character literal".into()));
                }
                Ok(Tok::OtherLit)
            }
            (Some(_), Some('\'')) => {
                self.pos += 2;
                Ok(Tok::OtherLit)
            }
            (Some(c), _) if is_ident_start(c) => {
                self.ident_text();
                Ok(Tok::Lifetime)
            }
            _ => Err(TokenError("invalid character literal".into())),
        }
    }

    /// An integer or float literal with its suffix, as rustc's lexer splits
    /// them: `1..2` is `1` `..` `2`, `1.5` and `1e3` are floats.
    fn number(&mut self) -> Tok {
        let radix = match (self.peek(), self.peek_at(1)) {
            (Some('0'), Some('x')) => 16,
            (Some('0'), Some('o')) => 8,
            (Some('0'), Some('b')) => 2,
            _ => 10,
        };
        if radix != 10 {
            self.pos += 2;
        }
        let start = self.pos;
        while self.peek().is_some_and(|c| {
            c == '_'
                || (if radix == 16 {
                    c.is_ascii_hexdigit()
                } else {
                    c.is_ascii_digit()
                })
        }) {
            self.pos += 1;
        }
        let digits: String = self.chars[start..self.pos]
            .iter()
            .filter(|c| **c != '_')
            .collect();
        let mut float = false;
        if radix == 10 {
            if self.peek() == Some('.')
                && !self
                    .peek_at(1)
                    .is_some_and(|c| c == '.' || is_ident_start(c))
            {
                float = true;
                self.pos += 1;
                while self.peek().is_some_and(|c| c == '_' || c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
            if matches!(self.peek(), Some('e' | 'E')) {
                let sign = usize::from(matches!(self.peek_at(1), Some('+' | '-')));
                if self.peek_at(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                    float = true;
                    self.pos += 1 + sign;
                    while self.peek().is_some_and(|c| c == '_' || c.is_ascii_digit()) {
                        self.pos += 1;
                    }
                }
            }
        }
        let suffix = self
            .peek()
            .is_some_and(is_ident_start)
            .then(|| self.ident_text());
        if float {
            return Tok::Float;
        }
        let value = if digits.is_empty() {
            None
        } else {
            u128::from_str_radix(&digits, radix).ok()
        };
        Tok::Int { value, suffix }
    }
}

/// A read position in a token-tree list; past the end it behaves like
/// klint's `Eof` token.
pub(crate) struct Cursor<'a> {
    trees: &'a [Tree],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(trees: &'a [Tree]) -> Self {
        Cursor { trees, pos: 0 }
    }

    pub(crate) fn is_eof(&self) -> bool {
        self.pos >= self.trees.len()
    }

    pub(crate) fn peek(&self) -> Option<&'a Tree> {
        self.trees.get(self.pos)
    }

    pub(crate) fn peek_is(&self, punct: Punct) -> bool {
        matches!(self.peek(), Some(Tree::Tok(Tok::Punct(p))) if *p == punct)
    }

    pub(crate) fn next(&mut self) -> Option<&'a Tree> {
        let tree = self.trees.get(self.pos);
        if tree.is_some() {
            self.pos += 1;
        }
        tree
    }

    /// Everything not consumed yet.
    pub(crate) fn rest(&self) -> &'a [Tree] {
        self.trees.get(self.pos..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tree> {
        tokenize(s).unwrap()
    }

    fn int(v: u128) -> Tree {
        Tree::Tok(Tok::Int {
            value: Some(v),
            suffix: None,
        })
    }

    fn p(p: Punct) -> Tree {
        Tree::Tok(Tok::Punct(p))
    }

    #[test]
    fn ranges_split_like_rustc() {
        assert_eq!(toks("1..2"), vec![int(1), p(Punct::DotDot), int(2)]);
        assert_eq!(toks("0..=2"), vec![int(0), p(Punct::DotDotEq), int(2)]);
        assert_eq!(
            toks("=..=2"),
            vec![p(Punct::Eq), p(Punct::DotDotEq), int(2)]
        );
        assert_eq!(toks("=-1"), vec![p(Punct::Eq), p(Punct::Minus), int(1)]);
        assert_eq!(toks("1.5"), vec![Tree::Tok(Tok::Float)]);
        assert_eq!(toks("1e3"), vec![Tree::Tok(Tok::Float)]);
        assert_eq!(toks("=="), vec![p(Punct::Other)]);
        assert_eq!(
            toks("1u32"),
            vec![Tree::Tok(Tok::Int {
                value: Some(1),
                suffix: Some("u32".into())
            })]
        );
        assert_eq!(toks("0x1_0"), vec![int(16)]);
        assert_eq!(
            toks("1.foo"),
            vec![int(1), p(Punct::Other), Tree::Tok(Tok::Ident("foo".into()))]
        );
    }

    #[test]
    fn strings_and_groups() {
        assert_eq!(
            toks(r##"("a\"b\u{41}", r#"x"y"#)"##),
            vec![Tree::Group(
                Delim::Paren,
                vec![
                    Tree::Tok(Tok::Str("a\"bA".into())),
                    p(Punct::Comma),
                    Tree::Tok(Tok::Str("x\"y".into()))
                ]
            )]
        );
        assert_eq!(toks("r#match"), vec![Tree::Tok(Tok::Ident("match".into()))]);
        assert_eq!(
            toks("b'a' 'a' 'a"),
            vec![
                Tree::Tok(Tok::OtherLit),
                Tree::Tok(Tok::OtherLit),
                Tree::Tok(Tok::Lifetime)
            ]
        );
        for bad in ["(", ")", "(]", "\"abc", "'", "/* x", "\"\\q\"", "r#\"x\""] {
            assert!(tokenize(bad).is_err(), "{bad:?}");
        }
        assert!(tokenize(&"(".repeat(100_000)).is_err());
        assert!(tokenize(&format!("{}{}", "(".repeat(60), ")".repeat(60))).is_ok());
    }
}
