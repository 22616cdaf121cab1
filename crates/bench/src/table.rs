pub fn render(_r: &[crate::RunResult]) -> String { String::new() }
