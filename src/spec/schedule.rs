//! The p_t schedules of Algorithm 1: the probability that iteration t uses the target's own
//! sample rather than another agent's message.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Form {
    /// 1 - 1/t^2 (FTS paper, real-world experiments)
    InvSquare,
    /// 1 - 1/sqrt(t) (FTS and DP papers, synthetic experiments)
    InvSqrt,
    /// 1 - 1/t (DP paper, real-world experiments)
    Inv,
    Constant(f64),
    /// p_1, p_2, ... for t = 1..=len; validated to cover every iteration.
    List(Vec<f64>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub form: Form,
    /// The papers' convention p_1 = p_2 (the named forms give p_1 = 0 otherwise).
    pub p1_equals_p2: bool,
}

impl Schedule {
    /// Parses the named forms; spaces are ignored. Returns None for anything else.
    pub fn parse_name(s: &str) -> Option<Form> {
        let c: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        match c.as_str() {
            "1-1/t^2" | "1-1/t**2" | "1-t^-2" => Some(Form::InvSquare),
            "1-1/sqrt(t)" | "1-1/t^0.5" | "1-t^-0.5" => Some(Form::InvSqrt),
            "1-1/t" | "1-t^-1" => Some(Form::Inv),
            _ => None,
        }
    }

    /// p_t for t >= 1.
    pub fn p(&self, t: usize) -> f64 {
        assert!(t >= 1, "iterations are numbered from 1");
        let t = if self.p1_equals_p2 && t == 1 { 2 } else { t };
        let tf = t as f64;
        match &self.form {
            Form::InvSquare => 1.0 - 1.0 / (tf * tf),
            Form::InvSqrt => 1.0 - 1.0 / tf.sqrt(),
            Form::Inv => 1.0 - 1.0 / tf,
            Form::Constant(p) => *p,
            Form::List(v) => v[(t - 1).min(v.len() - 1)],
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.form {
            Form::InvSquare => write!(f, "1-1/t^2")?,
            Form::InvSqrt => write!(f, "1-1/sqrt(t)")?,
            Form::Inv => write!(f, "1-1/t")?,
            Form::Constant(p) => write!(f, "{p}")?,
            Form::List(v) => write!(f, "list of {}", v.len())?,
        }
        if self.p1_equals_p2 {
            write!(f, " (p1=p2)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_forms_follow_their_formulas() {
        let s = |form, p1| Schedule {
            form,
            p1_equals_p2: p1,
        };
        assert_eq!(s(Form::InvSquare, true).p(1), 0.75);
        assert_eq!(s(Form::InvSquare, true).p(2), 0.75);
        assert_eq!(s(Form::InvSquare, false).p(1), 0.0);
        assert!((s(Form::InvSqrt, false).p(4) - 0.5).abs() < 1e-15);
        assert!((s(Form::Inv, false).p(10) - 0.9).abs() < 1e-15);
        assert_eq!(s(Form::Inv, false).p(1), 0.0);
        assert_eq!(s(Form::Constant(0.3), false).p(7), 0.3);
        assert_eq!(s(Form::List(vec![0.1, 0.2]), false).p(2), 0.2);
    }

    #[test]
    fn names_parse_with_or_without_spaces() {
        assert_eq!(Schedule::parse_name("1 - 1/sqrt(t)"), Some(Form::InvSqrt));
        assert_eq!(Schedule::parse_name("1-1/t^2"), Some(Form::InvSquare));
        assert_eq!(Schedule::parse_name("1-1/t"), Some(Form::Inv));
        assert_eq!(Schedule::parse_name("1-1/t^3"), None);
    }
}
