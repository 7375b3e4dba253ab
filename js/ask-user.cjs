'use strict';
// The ask-user wire shapes: questions a tool puts to the user (each with two to four options) and the answers that
// come back, one zod schema each, so a tool, a UI and an IPC bridge check the same thing.
const zod = require('zod');
const z = zod.z ?? zod;

const AskUserOptionSchema = z.object({
  label: z.string().min(1).describe('What the option shows: a few words.'),
  description: z.string().describe('What choosing this option means or does.'),
  preview: z.string().optional().describe('Content (Markdown or an HTML fragment) shown while the option is focused, to compare options side by side.'),
});

const AskUserQuestionSchema = z.object({
  question: z.string().min(1).describe('The whole question, specific, ending with a question mark.'),
  header: z.string().min(1).max(12).describe('A tag of 1 to 12 characters shown beside the question.'),
  options: z.array(AskUserOptionSchema).min(2).max(4).describe('Two to four distinct choices; the user may also write their own ("Other").'),
  multiSelect: z.boolean().default(false).describe('Whether several options may be chosen.'),
});

const AskUserInputSchema = z.object({
  questions: z
    .array(AskUserQuestionSchema)
    .min(1)
    .max(4)
    .describe('One to four questions.')
    // Answers are keyed by question text, so two questions with one text would lose an answer.
    .refine((questions) => new Set(questions.map((q) => q.question)).size === questions.length, {
      message: 'Each question text must be unique: answers are keyed by it.',
    }),
});

const AskUserAnnotationSchema = z.object({
  notes: z.string().optional().describe('Notes the user added to their choice.'),
  preview: z.string().optional().describe("The chosen option's preview, when the question had previews."),
});

const AskUserOutputSchema = z.object({
  answers: z.record(z.string(), z.string()).describe('Each question text mapped to the answer: an option label or the text the user wrote.'),
  annotations: z.record(z.string(), AskUserAnnotationSchema).optional().describe('Notes and previews per question text, when there are any.'),
});

module.exports = { AskUserOptionSchema, AskUserQuestionSchema, AskUserInputSchema, AskUserAnnotationSchema, AskUserOutputSchema };
