//! The readable form of a [`Filter`]:
//!
//! ```text
//! filter    := and_expr ("or" and_expr)*
//! and_expr  := unary ("and" unary)*
//! unary     := "not" unary | "(" filter ")" | "(" ")" | condition
//! condition := FIELD ("=" | "!=" | ">" | ">=" | "<" | "<=" | "contains") VALUE
//!            | FIELD ["not"] "in" "(" [VALUE ("," VALUE)*] ")"
//!            | FIELD ["not"] "exists"
//! VALUE     := "a JSON string" | 'text' | WORD
//! WORD      := [A-Za-z0-9_.:+-]+
//! ```
//!
//! Keywords are case-insensitive; `==` is `=`. A WORD is read by the field's kind: a
//! number for `confidence`, a time for the time fields, a category name for `category`,
//! text for the text fields, and for metadata `true`/`false` as booleans, numbers as
//! numbers and anything else as text (quote it to keep `"3"` a string). `()` is the
//! filter that holds for every fact.

use serde_json::Value;

use std::fmt;

use super::ast::{Condition, FieldKind, Filter, FilterError, FilterField, Operand, Operator};
use super::ast::{MAX_FILTER_DEPTH, MAX_FILTER_ITEMS};
use super::check::{Path, condition, parse_field};
use crate::metadata::number_json;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Open,
    Close,
    Comma,
    Compare(Operator),
}

struct Lexed {
    token: Token,
    column: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '+' | '-')
}

fn at(column: usize, reason: impl Into<String>) -> FilterError {
    FilterError::new(format!("column {column}"), reason)
}

fn lex(text: &str) -> Result<Vec<Lexed>, FilterError> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        let column = text.get(..start).map_or(0, |before| before.chars().count()) + 1;
        let token = match c {
            c if c.is_whitespace() => {
                chars.next();
                continue;
            }
            '(' => {
                chars.next();
                Token::Open
            }
            ')' => {
                chars.next();
                Token::Close
            }
            ',' => {
                chars.next();
                Token::Comma
            }
            '=' | '!' | '<' | '>' => {
                chars.next();
                let next_is_eq = chars.peek().is_some_and(|&(_, n)| n == '=');
                if next_is_eq {
                    chars.next();
                }
                Token::Compare(match (c, next_is_eq) {
                    ('=', _) => Operator::Eq,
                    ('!', true) => Operator::Ne,
                    ('<', false) => Operator::Lt,
                    ('<', true) => Operator::Lte,
                    ('>', false) => Operator::Gt,
                    ('>', true) => Operator::Gte,
                    _ => return Err(at(column, "`!` must be followed by `=`")),
                })
            }
            '"' => {
                // A JSON string literal: find its end, honouring escapes.
                chars.next();
                let mut escaped = false;
                let mut end = None;
                for (i, c) in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        end = Some(i);
                        break;
                    }
                }
                let end = end.ok_or_else(|| at(column, "a string is not closed"))?;
                match serde_json::from_str::<Value>(text.get(start..=end).unwrap_or_default()) {
                    Ok(Value::String(inner)) => Token::Quoted(inner),
                    _ => return Err(at(column, "a string with a bad escape")),
                }
            }
            '\'' => {
                // 'text', with '' or \' for a quote inside.
                chars.next();
                let mut inner = String::new();
                let mut closed = false;
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' if chars.peek().is_some_and(|&(_, n)| n == '\'' || n == '\\') => {
                            if let Some((_, n)) = chars.next() {
                                inner.push(n);
                            }
                        }
                        '\'' if chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                            chars.next();
                            inner.push('\'');
                        }
                        '\'' => {
                            closed = true;
                            break;
                        }
                        other => inner.push(other),
                    }
                }
                if !closed {
                    return Err(at(column, "a string is not closed"));
                }
                Token::Quoted(inner)
            }
            c if is_word_char(c) => {
                let mut word = String::new();
                while let Some(&(_, c)) = chars.peek() {
                    if !is_word_char(c) {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                Token::Word(word)
            }
            other => return Err(at(column, format!("unexpected `{other}`"))),
        };
        out.push(Lexed { token, column });
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Lexed>,
    next: usize,
    /// The column just past the text, for errors at its end.
    end: usize,
    depth: usize,
    items: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|l| &l.token)
    }

    fn column(&self) -> usize {
        self.tokens.get(self.next).map_or(self.end, |l| l.column)
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    fn keyword_after(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.next + 1).map(|l| &l.token), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    fn bump(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.next).map(|l| l.token.clone());
        self.next += 1;
        token
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "the end".to_owned(),
            Some(Token::Word(w)) => format!("`{}`", crate::clip(w, 40)),
            Some(Token::Quoted(q)) => format!("\"{}\"", crate::clip(q, 40)),
            Some(Token::Open) => "`(`".to_owned(),
            Some(Token::Close) => "`)`".to_owned(),
            Some(Token::Comma) => "`,`".to_owned(),
            Some(Token::Compare(op)) => format!("`{}`", compare_text(*op)),
        }
    }

    fn expected(&self, what: &str) -> FilterError {
        at(
            self.column(),
            format!("expected {what}, found {}", self.found()),
        )
    }

    fn enter(&mut self) -> Result<(), FilterError> {
        self.depth += 1;
        if self.depth > MAX_FILTER_DEPTH {
            return Err(at(
                self.column(),
                format!("filters nest at most {} levels deep", MAX_FILTER_DEPTH),
            ));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Filter, FilterError> {
        let mut parts = vec![self.and()?];
        while self.keyword("or") {
            self.bump();
            parts.push(self.and()?);
        }
        Ok(single(parts, Filter::Or))
    }

    fn and(&mut self) -> Result<Filter, FilterError> {
        let mut parts = vec![self.unary()?];
        while self.keyword("and") {
            self.bump();
            parts.push(self.unary()?);
        }
        Ok(single(parts, Filter::And))
    }

    fn unary(&mut self) -> Result<Filter, FilterError> {
        if self.keyword("not") {
            self.bump();
            self.enter()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Filter::Not(Box::new(inner)));
        }
        if self.peek() == Some(&Token::Open) {
            self.bump();
            if self.peek() == Some(&Token::Close) {
                self.bump();
                return Ok(Filter::all());
            }
            self.enter()?;
            let inner = self.or()?;
            self.depth -= 1;
            if self.bump() != Some(Token::Close) {
                self.next -= 1;
                return Err(self.expected("`)`"));
            }
            return Ok(inner);
        }
        self.condition()
    }

    fn count(&mut self, column: usize) -> Result<(), FilterError> {
        self.items += 1;
        if self.items > MAX_FILTER_ITEMS {
            return Err(at(
                column,
                format!(
                    "the filter holds more than {} conditions and values",
                    MAX_FILTER_ITEMS
                ),
            ));
        }
        Ok(())
    }

    fn condition(&mut self) -> Result<Filter, FilterError> {
        let column = self.column();
        let Some(Token::Word(name)) = self.peek().cloned() else {
            return Err(self.expected("a field"));
        };
        self.bump();
        let field = parse_field(&name).map_err(|reason| at(column, reason))?;
        self.count(column)?;
        let op_column = self.column();
        let negated =
            self.keyword("not") && (self.keyword_after("in") || self.keyword_after("exists"));
        if negated {
            self.bump();
        }
        let (op, value) = if self.keyword("exists") {
            self.bump();
            (Operator::Exists, Value::Bool(!negated))
        } else if self.keyword("in") {
            self.bump();
            let list = self.list(&field)?;
            (if negated { Operator::Nin } else { Operator::In }, list)
        } else if self.keyword("contains") {
            self.bump();
            (Operator::Contains, self.value(&FilterField::Subject)?)
        } else if let Some(Token::Compare(op)) = self.peek().cloned() {
            self.bump();
            (op, self.value(&field)?)
        } else {
            return Err(self
                .expected("an operator (= != > >= < <= contains in, not in, exists, not exists)"));
        };
        let built: Condition = condition(field, op, &value, &Path(format!("column {op_column}")))?;
        Ok(Filter::Condition(built))
    }

    fn list(&mut self, field: &FilterField) -> Result<Value, FilterError> {
        if self.bump() != Some(Token::Open) {
            self.next -= 1;
            return Err(self.expected("`(` and a list of values"));
        }
        let mut values = Vec::new();
        if self.peek() == Some(&Token::Close) {
            self.bump();
            return Ok(Value::Array(values));
        }
        loop {
            let column = self.column();
            values.push(self.value(field)?);
            self.count(column)?;
            match self.bump() {
                Some(Token::Comma) => {}
                Some(Token::Close) => return Ok(Value::Array(values)),
                _ => {
                    self.next -= 1;
                    return Err(self.expected("`,` or `)`"));
                }
            }
        }
    }

    /// A value, as the JSON the field's checks take.
    fn value(&mut self, field: &FilterField) -> Result<Value, FilterError> {
        match self.peek().cloned() {
            Some(Token::Quoted(text)) => {
                self.bump();
                Ok(Value::String(text))
            }
            Some(Token::Word(word)) => {
                self.bump();
                Ok(match field.kind() {
                    FieldKind::Number => word
                        .parse::<f64>()
                        .ok()
                        .filter(|n| n.is_finite())
                        .map_or(Value::String(word), number_json),
                    FieldKind::Meta => match crate::MetaValue::typed(&word) {
                        crate::MetaValue::Bool(flag) => Value::Bool(flag),
                        crate::MetaValue::Number(number) => number_json(number),
                        crate::MetaValue::String(text) => Value::String(text),
                    },
                    FieldKind::Text | FieldKind::Tag | FieldKind::Time => Value::String(word),
                })
            }
            _ => Err(self.expected("a value")),
        }
    }
}

/// One part alone, or several under `combine`.
fn single(mut parts: Vec<Filter>, combine: fn(Vec<Filter>) -> Filter) -> Filter {
    if parts.len() == 1 {
        parts.pop().unwrap_or_else(Filter::all)
    } else {
        combine(parts)
    }
}

fn parse(text: &str) -> Result<Filter, FilterError> {
    let tokens = lex(text)?;
    let mut parser = Parser {
        tokens,
        next: 0,
        end: text.chars().count() + 1,
        depth: 0,
        items: 0,
    };
    if parser.peek().is_none() {
        return Err(at(1, "the filter is empty (`()` holds for every fact)"));
    }
    let filter = parser.or()?;
    if parser.peek().is_some() {
        return Err(parser.expected("`and`, `or` or the end"));
    }
    Ok(filter)
}

fn compare_text(op: Operator) -> &'static str {
    match op {
        Operator::Eq => "=",
        Operator::Ne => "!=",
        Operator::Gt => ">",
        Operator::Gte => ">=",
        Operator::Lt => "<",
        Operator::Lte => "<=",
        other => other.name(),
    }
}

fn write_operand(out: &mut String, operand: &Operand) {
    match operand {
        Operand::Text(text) => out.push_str(&Value::String(text.clone()).to_string()),
        Operand::Number(number) => out.push_str(&number_json(*number).to_string()),
        Operand::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Operand::Time(time) => {
            out.push('"');
            out.push_str(&time.to_string());
            out.push('"');
        }
        Operand::Tag(tag) => out.push_str(tag.as_str()),
    }
}

fn write_into(out: &mut String, filter: &Filter, nested: bool) {
    match filter {
        Filter::And(list) if list.is_empty() => out.push_str("()"),
        // `not ()` holds for no fact, as an empty `or`.
        Filter::Or(list) if list.is_empty() => out.push_str("not ()"),
        Filter::And(list) | Filter::Or(list) => {
            let joiner = if matches!(filter, Filter::And(_)) {
                " and "
            } else {
                " or "
            };
            let parens = nested && list.len() > 1;
            if parens {
                out.push('(');
            }
            for (n, part) in list.iter().enumerate() {
                if n > 0 {
                    out.push_str(joiner);
                }
                write_into(out, part, true);
            }
            if parens {
                out.push(')');
            }
        }
        Filter::Not(inner) => {
            out.push_str("not ");
            write_into(out, inner, true);
        }
        Filter::Condition(condition) => {
            out.push_str(&condition.field().name());
            match condition.op() {
                Operator::Exists => {
                    out.push_str(if condition.exists() {
                        " exists"
                    } else {
                        " not exists"
                    });
                }
                Operator::In | Operator::Nin => {
                    out.push_str(if condition.op() == Operator::In {
                        " in ("
                    } else {
                        " not in ("
                    });
                    for (n, operand) in condition.operands().iter().enumerate() {
                        if n > 0 {
                            out.push_str(", ");
                        }
                        write_operand(out, operand);
                    }
                    out.push(')');
                }
                op => {
                    out.push(' ');
                    out.push_str(compare_text(op));
                    out.push(' ');
                    if let Some(operand) = condition.operands().first() {
                        write_operand(out, operand);
                    }
                }
            }
        }
    }
}

fn write(filter: &Filter) -> String {
    let mut out = String::new();
    write_into(&mut out, filter, false);
    out
}

impl Filter {
    /// Reads and checks a filter in its readable form: `metadata.project = "rlm" and
    /// category in (preference, decision)`; the grammar is in `docs/protocol.md` and
    /// [`Filter::to_where`] writes it.
    ///
    /// # Errors
    ///
    /// [`FilterError`] whose path names the column where reading failed.
    pub fn parse_where(text: &str) -> Result<Filter, FilterError> {
        parse(text)
    }

    /// The filter in its readable form, which [`parse_where`](Self::parse_where) reads
    /// back to an equal filter.
    #[must_use]
    pub fn to_where(&self) -> String {
        write(self)
    }
}

impl fmt::Display for Filter {
    /// The readable form ([`Filter::to_where`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_where())
    }
}
