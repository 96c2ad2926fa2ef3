"""Frequent English words, for one load-time warning: a disguise that is such a word, or
occurs inside one, is also found in the model's own prose and "restored" there (a
disguise `the` turns "weather" into "weaAcmer"). Not a dictionary: a short list of the
words most likely to appear in a model's answer, enough to catch the mistake.
"""

COMMON_WORDS = frozenset(
    """
    a able about account address admin after again agent air all alpha also always an and any
    anyone anything are area art as ask at back base be because been before best beta better
    between big block body book both build business but by call can car case change chunk city
    client close code come company config content cost could country customer data day delta deploy
    do done door during each early education email end error even event everyone everything
    external eye face fact false father feel few field file find first for force form friend from
    further game gamma get girl give global go good govern great group guy had hand has have he
    head health her here high him his history home host hour house how i idea if image important in
    index input internal into is issue it item its job just key kid kind know large last law lead
    level light like line link list little local login long look lot made main make many map market
    may me member message minute model moment money month more morning most mother my name need
    never new next night no nobody node none not note nothing now null number of office often old
    on once one only open option or order other our out output over own page part party password
    path people person phone place plan point port power price private product program project
    public put query question read reason receive release reply report research result right room
    run said sale same say secret see seem send server service set setting she should show side
    small so some someone something sometimes staff start state status still stop story stream
    street study such system table take task teacher team test text than that the their them then
    there these they thing think this those time to today together token tomorrow tool true two
    type under up us use user value version very view want war was water way we weather week well
    were what when where which while who why will with word work world would write year yes
    yesterday you young your
    """.split()
)
