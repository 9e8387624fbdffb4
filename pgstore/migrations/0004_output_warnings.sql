-- What a succeeded conversion could not keep (issue 23): a JSON array of {"code","message"}
-- objects in the order reported, NULL when there is nothing to say. It is text, not jsonb:
-- jsonb refuses "\u0000", and a message may quote any character of the input.
ALTER TABLE jobs ADD COLUMN output_warnings text;
