//! The hello world's type, as IDL: `module hello { struct Hello { @key long id; unsigned long count; string text; }; };`

#[derive(Clone, Debug, Default, detpath_pubsub::TopicType)]
#[dds(type_name = "hello::Hello")]
pub struct Hello {
    #[key]
    pub id: i32,
    pub count: u32,
    pub text: String,
}
