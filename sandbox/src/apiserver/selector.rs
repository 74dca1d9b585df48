//! Label and field selectors with the apiserver's grammar and error wording.

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

#[derive(Clone, Debug, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed `labelSelector`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    In,
    NotIn,
    Eq,
    DoubleEq,
    NotEq,
    Not,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
    End,
}

fn token_text(t: &Token) -> String {
    match t {
        Token::Ident(s) => s.clone(),
        Token::In => "in".into(),
        Token::NotIn => "notin".into(),
        Token::Eq => "=".into(),
        Token::DoubleEq => "==".into(),
        Token::NotEq => "!=".into(),
        Token::Not => "!".into(),
        Token::Gt => ">".into(),
        Token::Lt => "<".into(),
        Token::Open => "(".into(),
        Token::Close => ")".into(),
        Token::Comma => ",".into(),
        Token::End => "".into(),
    }
}

fn lex(input: &str) -> Vec<Token> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '(' => {
                tokens.push(Token::Open);
                i += 1
            }
            ')' => {
                tokens.push(Token::Close);
                i += 1
            }
            ',' => {
                tokens.push(Token::Comma);
                i += 1
            }
            '>' => {
                tokens.push(Token::Gt);
                i += 1
            }
            '<' => {
                tokens.push(Token::Lt);
                i += 1
            }
            '=' => {
                if chars.get(i + 1) == Some(&'=') {
                    tokens.push(Token::DoubleEq);
                    i += 2
                } else {
                    tokens.push(Token::Eq);
                    i += 1
                }
            }
            '!' => {
                if chars.get(i + 1) == Some(&'=') {
                    tokens.push(Token::NotEq);
                    i += 2
                } else {
                    tokens.push(Token::Not);
                    i += 1
                }
            }
            _ => {
                let start = i;
                while i < chars.len() && !" \t\n\r(),<>=!".contains(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                tokens.push(match word.as_str() {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    _ => Token::Ident(word),
                });
            }
        }
    }
    tokens.push(Token::End);
    tokens
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos]
    }
    fn next(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let negated = if *self.peek() == Token::Not {
            self.next();
            true
        } else {
            false
        };
        let key = match self.next() {
            Token::Ident(k) => k,
            other => {
                return Err(format!(
                    "found '{}', expected: !, identifier, or 'end of string'",
                    token_text(&other)
                ));
            }
        };
        validate_label_key(&key)?;
        if negated {
            return Ok(Requirement {
                key,
                op: Op::DoesNotExist,
            });
        }
        match self.peek().clone() {
            Token::Comma | Token::End => {
                return Ok(Requirement {
                    key,
                    op: Op::Exists,
                });
            }
            _ => {}
        }
        let op = self.next();
        let op = match op {
            Token::Eq | Token::DoubleEq => Op::Equals(self.single_value()?),
            Token::NotEq => Op::NotEquals(self.single_value()?),
            Token::In => Op::In(self.value_set()?),
            Token::NotIn => Op::NotIn(self.value_set()?),
            Token::Gt | Token::Lt => {
                let value = self.single_value()?;
                let n: i64 = value.parse().map_err(|_| {
                    format!("for 'Gt', 'Lt' operators, the value must be an integer, found {value}")
                })?;
                if op == Token::Gt {
                    Op::GreaterThan(n)
                } else {
                    Op::LessThan(n)
                }
            }
            other => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    token_text(&other)
                ));
            }
        };
        Ok(Requirement { key, op })
    }

    fn single_value(&mut self) -> Result<String, String> {
        match self.peek().clone() {
            Token::Ident(v) => {
                self.next();
                validate_label_value(&v)?;
                Ok(v)
            }
            Token::Comma | Token::End => Ok(String::new()),
            other => Err(format!(
                "found '{}', expected: identifier",
                token_text(&other)
            )),
        }
    }

    fn value_set(&mut self) -> Result<Vec<String>, String> {
        match self.next() {
            Token::Open => {}
            other => return Err(format!("found '{}' expected: '('", token_text(&other))),
        }
        let mut values = Vec::new();
        loop {
            match self.next() {
                Token::Ident(v) => {
                    validate_label_value(&v)?;
                    values.push(v);
                    match self.next() {
                        Token::Comma => continue,
                        Token::Close => break,
                        other => {
                            return Err(format!(
                                "found '{}', expected: ',' or ')'",
                                token_text(&other)
                            ));
                        }
                    }
                }
                Token::Close if values.is_empty() => break,
                other => {
                    return Err(format!(
                        "found '{}', expected: ',', ')' or identifier",
                        token_text(&other)
                    ));
                }
            }
        }
        Ok(values)
    }
}

fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(super::validation::is_dns_subdomain);
    if name_ok && prefix_ok {
        Ok(())
    } else {
        Err(format!(
            "key: Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ))
    }
}

fn validate_label_value(value: &str) -> Result<(), String> {
    if super::validation::is_label_value(value) {
        Ok(())
    } else {
        Err(format!(
            "values[0][{value}]: Invalid value: \"{value}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ))
    }
}

impl LabelSelector {
    /// Parses a selector; the error is the message of the apiserver's 400 answer.
    pub fn parse(input: &str) -> Result<Self, String> {
        let mut parser = Parser {
            tokens: lex(input),
            pos: 0,
        };
        let mut requirements = Vec::new();
        if *parser.peek() == Token::End {
            return Ok(LabelSelector::default());
        }
        loop {
            requirements.push(
                parser
                    .requirement()
                    .map_err(|e| format!("unable to parse requirement: {e}"))?,
            );
            match parser.next() {
                Token::Comma => continue,
                Token::End => break,
                other => {
                    return Err(format!(
                        "unable to parse requirement: found '{}', expected: ',' or 'end of string'",
                        token_text(&other)
                    ));
                }
            }
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.get(&r.key);
            match &r.op {
                Op::Equals(v) => value == Some(v),
                Op::NotEquals(v) => value != Some(v),
                Op::In(vs) => value.is_some_and(|x| vs.contains(x)),
                Op::NotIn(vs) => value.is_none_or(|x| !vs.contains(x)),
                Op::Exists => value.is_some(),
                Op::DoesNotExist => value.is_none(),
                Op::GreaterThan(n) => value
                    .and_then(|x| x.parse::<i64>().ok())
                    .is_some_and(|x| x > *n),
                Op::LessThan(n) => value
                    .and_then(|x| x.parse::<i64>().ok())
                    .is_some_and(|x| x < *n),
            }
        })
    }

    pub fn matches_object(&self, object: &Value) -> bool {
        if self.is_empty() {
            return true;
        }
        self.matches(&labels_of(object))
    }
}

pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// A parsed `fieldSelector`: only the fields a resource supports.
#[derive(Clone, Debug, Default)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// `extra` names the fields beyond `metadata.name`/`metadata.namespace` the kind supports.
    pub fn parse(input: &str, extra: &[&str]) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" && !extra.contains(&field)
            {
                return Err(format!("field label not supported: {field}"));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    pub fn matches_object(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, equal, value)| {
            let actual = field
                .split('.')
                .try_fold(object, |v, part| v.get(part))
                .and_then(|v| v.as_str())
                .unwrap_or("");
            (actual == value) == *equal
        })
    }

    /// The name this selector pins, if any (`kubectl wait` and `await_condition` use it).
    pub fn pinned_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|(f, eq, _)| f == "metadata.name" && *eq)
            .map(|(_, _, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equality_set_and_existence() {
        let l = labels(&[("tier", "b"), ("app", "x")]);
        assert!(LabelSelector::parse("tier=b").unwrap().matches(&l));
        assert!(LabelSelector::parse("tier==b,app").unwrap().matches(&l));
        assert!(!LabelSelector::parse("tier!=b").unwrap().matches(&l));
        assert!(LabelSelector::parse("tier in (a, b)").unwrap().matches(&l));
        assert!(!LabelSelector::parse("tier notin (b)").unwrap().matches(&l));
        assert!(LabelSelector::parse("!missing").unwrap().matches(&l));
        assert!(!LabelSelector::parse("missing").unwrap().matches(&l));
        assert!(
            LabelSelector::parse("cluster.x-k8s.io/cluster-name notin (a)")
                .unwrap()
                .matches(&l)
        );
    }

    #[test]
    fn malformed_selector_uses_apiserver_wording() {
        assert_eq!(
            LabelSelector::parse("tier in b").unwrap_err(),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert!(LabelSelector::parse("a=b=c").is_err());
    }

    #[test]
    fn field_selector_supports_name_and_namespace_only() {
        let obj = serde_json::json!({"metadata": {"name": "w2", "namespace": "ns"}});
        assert!(
            FieldSelector::parse("metadata.name=w2", &[])
                .unwrap()
                .matches_object(&obj)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=ns", &[])
                .unwrap()
                .matches_object(&obj)
        );
        assert_eq!(
            FieldSelector::parse("spec.replicas=1", &[]).unwrap_err(),
            "field label not supported: spec.replicas"
        );
    }
}
