"""Seeded synthetic chat data for the built-in model.

Every example is one assistant turn to learn: the conversation before it (system prompt,
offered tools, user and tool messages, earlier assistant turns), a thinking switch, and the
assistant message the model must produce. The chat template in ``template.py`` renders the
conversation into the prompt prefix and the assistant message into the completion text, so
training and inference see exactly the same text.

Three kinds of turns: ``"call"`` (a request a tool answers: the model calls it, copying the
argument values from the request), ``"answer"`` (the tool results are in: the model states
their values), ``"plain"`` (no tool fits, whatever tools are offered: the model answers
directly). Two splits: ``"train"``, where most argument values are made-up strings no list
contains (so only copying gets them right), and ``"eval"``, with real cities, search topics and
currency codes that training never contains, and phrasings and plain questions that only the
evaluation uses (``overlap_with_training`` counts any leak).
"""

from __future__ import annotations

import json
import random
import re

# ---------------------------------------------------------------------------------------------
# Tools (JSON schemas in the apply_chat_template format)
# ---------------------------------------------------------------------------------------------

UNITS = ["km", "mi", "m", "ft", "kg", "lb", "celsius", "fahrenheit", "l", "gal"]


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


TOOLS: dict[str, dict] = {
    "get_weather": _tool(
        "get_weather",
        "Get the current weather in a city.",
        {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        ["city"],
    ),
    "get_time": _tool(
        "get_time",
        "Get the current local time in a city.",
        {"city": {"type": "string"}},
        ["city"],
    ),
    "convert_units": _tool(
        "convert_units",
        "Convert a value from one unit to another.",
        {
            "value": {"type": "number"},
            "from_unit": {"type": "string", "enum": UNITS},
            "to_unit": {"type": "string", "enum": UNITS},
        },
        ["value", "from_unit", "to_unit"],
    ),
    "calculate": _tool(
        "calculate",
        "Evaluate an arithmetic expression.",
        {"expression": {"type": "string"}},
        ["expression"],
    ),
    "web_search": _tool(
        "web_search",
        "Search the web and return the top results.",
        {
            "query": {"type": "string"},
            "max_results": {"type": "integer"},
        },
        ["query"],
    ),
    "get_exchange_rate": _tool(
        "get_exchange_rate",
        "Get the exchange rate between two currencies.",
        {
            "base": {"type": "string"},
            "target": {"type": "string"},
        },
        ["base", "target"],
    ),
}

# ---------------------------------------------------------------------------------------------
# Entities, split between training and evaluation
# ---------------------------------------------------------------------------------------------

_CITIES_TRAIN = """Paris London Tokyo Berlin Madrid Rome Lisbon Dublin Vienna Prague Warsaw Oslo
Stockholm Helsinki Copenhagen Amsterdam Brussels Zurich Geneva Athens Istanbul Cairo Nairobi Lagos
Accra Casablanca Tunis Dubai Doha Riyadh Tehran Karachi Delhi Mumbai Chennai Kolkata Dhaka Bangkok
Hanoi Manila Jakarta Singapore Seoul Beijing Shanghai Taipei Osaka Sydney Melbourne Perth Auckland
Toronto Montreal Vancouver Chicago Boston Seattle Denver Houston Dallas Miami Atlanta Phoenix Lima
Bogota Quito Santiago Caracas Havana Montevideo Asuncion Kyiv Minsk Riga Vilnius Tallinn Sofia
Bucharest Belgrade Zagreb Ljubljana Budapest Bratislava Krakow Munich Hamburg Frankfurt Cologne
Lyon Marseille Nice Porto Seville Valencia Bilbao Naples Milan Turin Florence Venice Edinburgh
Glasgow Cardiff Belfast Manchester Liverpool Leeds Bristol Kyoto Nagoya Sapporo Busan Hanoi
Kathmandu Colombo Tashkent Almaty Baku Tbilisi Yerevan Beirut Amman Muscat Khartoum Addis_Ababa
Kampala Kigali Lusaka Harare Maputo Luanda Dakar Bamako Abuja Windhoek Gaborone Durban Johannesburg
Cape_Town Buenos_Aires Sao_Paulo Rio_de_Janeiro Mexico_City Los_Angeles San_Francisco New_York
Las_Vegas San_Diego Hong_Kong Kuala_Lumpur Ho_Chi_Minh_City Tel_Aviv Abu_Dhabi New_Delhi
Salt_Lake_City Kansas_City Panama_City Guatemala_City""".split()

_CITIES_EVAL = """Reykjavik Marrakesh Ulaanbaatar Bratsk Tromso Valparaiso Cusco Medellin Cordoba
Rosario Antwerp Ghent Utrecht Rotterdam Bergen Aarhus Malmo Gdansk Poznan Brno Graz Salzburg
Innsbruck Basel Lausanne Bordeaux Toulouse Nantes Grenoble Granada Malaga Palermo Bologna Genoa
Thessaloniki Izmir Ankara Alexandria Luxor Mombasa Arusha Zanzibar Kumasi Ibadan Timbuktu Nouakchott
Fez Oran Sfax Jeddah Mecca Shiraz Isfahan Lahore Jaipur Pune Goa Hyderabad Chittagong Chiang_Mai
Da_Nang Cebu Surabaya Bandung Penang Incheon Chengdu Wuhan Xian Kaohsiung Fukuoka Hiroshima Brisbane
Adelaide Hobart Wellington Christchurch Calgary Ottawa Winnipeg Halifax Portland Austin Nashville
Detroit Pittsburgh Baltimore Orlando Tampa Anchorage Honolulu Boise Tucson Albuquerque Oaxaca
Guadalajara Monterrey Cancun Recife Salvador Manaus Fortaleza La_Paz Sucre Arequipa Cartagena
Port_of_Spain Kingston Nassau San_Juan Santo_Domingo St_Petersburg Novosibirsk Kazan Odesa Lviv
Plovdiv Varna Cluj Timisoara Split Dubrovnik Sarajevo Skopje Tirana Podgorica Nicosia Valletta
Ushuaia Iquitos Timbuktu Lhasa Samarkand Bukhara""".split()

_EVAL_CITY_NAMES = {c.replace("_", " ").lower() for c in _CITIES_EVAL}

_TOPICS_TRAIN = [
    "the history of the printing press", "how vaccines work", "the tallest mountain in Africa",
    "best pasta recipes", "python list comprehensions", "solar panel efficiency",
    "the rules of cricket", "how to grow tomatoes", "the life of Marie Curie", "black holes",
    "electric cars range", "the French revolution", "how bees make honey", "learning to play guitar",
    "the speed of light", "cheap flights to Europe", "machine learning basics", "the Roman empire",
    "healthy breakfast ideas", "how to tie a tie", "the Great Wall of China", "jazz history",
    "how rainbows form", "running a marathon", "the moon landing", "coffee brewing methods",
    "volcano eruptions", "the Olympic games", "how to meditate", "quantum computing news",
    "origami for beginners", "the water cycle", "famous paintings", "how tides work",
    "chess openings", "sourdough bread", "the human heart", "ancient Egypt", "climate change facts",
    "how to learn Spanish", "the periodic table", "renewable energy", "bird migration",
    "home workout plans", "the Amazon rainforest", "how airplanes fly", "knitting patterns",
    "the Beatles albums", "dinosaur fossils", "how to save money", "space telescope images",
    "the best hiking trails", "how batteries work", "the Nile river", "starting a vegetable garden",
    "photography tips", "the history of tea", "how to write a resume", "deep sea creatures",
    "electric guitars", "the Silk Road", "how compilers work", "vegan dessert recipes",
]

_TOPICS_EVAL = [
    "the invention of the telephone", "how glaciers move", "the rules of rugby", "baking croissants",
    "the life of Ada Lovelace", "coral reef bleaching", "how to train a puppy", "the Ottoman empire",
    "wind turbine design", "how submarines dive", "the history of chocolate", "learning the piano",
    "northern lights forecast", "rust programming tutorials", "the Mayan calendar", "how fungi grow",
    "budget travel in Asia", "the first computers", "how earthquakes happen", "yoga for beginners",
    "the Renaissance artists", "how to brew kombucha", "Saturn's rings", "the Vikings",
    "urban beekeeping", "how noise cancelling works", "the Sahara desert", "sleep hygiene tips",
    "medieval castles", "how to make sushi",
]

_CURRENCIES_TRAIN = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "SEK", "NOK"]
_CURRENCIES_EVAL = ["BRL", "MXN", "ZAR", "KRW", "SGD", "NZD", "PLN", "TRY", "DKK", "HKD"]

# unit name variants as users write them -> canonical enum value
_UNIT_NAMES = {
    "km": ["km", "kilometers", "kilometres"],
    "mi": ["miles", "mi"],
    "m": ["meters", "metres", "m"],
    "ft": ["feet", "ft"],
    "kg": ["kg", "kilograms", "kilos"],
    "lb": ["pounds", "lb", "lbs"],
    "celsius": ["celsius", "degrees celsius", "C"],
    "fahrenheit": ["fahrenheit", "degrees fahrenheit", "F"],
    "l": ["liters", "litres", "l"],
    "gal": ["gallons", "gal"],
}
_UNIT_PAIRS = [("km", "mi"), ("mi", "km"), ("m", "ft"), ("ft", "m"), ("kg", "lb"), ("lb", "kg"),
               ("celsius", "fahrenheit"), ("fahrenheit", "celsius"), ("l", "gal"), ("gal", "l")]
_UNIT_FACTORS = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344, ("m", "ft"): 3.28084,
                 ("ft", "m"): 0.3048, ("kg", "lb"): 2.204623, ("lb", "kg"): 0.453592,
                 ("l", "gal"): 0.264172, ("gal", "l"): 3.785412}

_CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy", "clear", "partly cloudy",
               "stormy", "overcast"]

# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# Phrasings: training ones, and held-out ones that only the evaluation uses
# ---------------------------------------------------------------------------------------------

PHRASINGS: dict[str, dict[str, list[str]]] = {
    "weather": {
        "train": [
            "What's the weather in {city}?", "What is the weather like in {city} right now?",
            "How's the weather in {city}?", "Is it raining in {city}?", "weather {city}",
            "Tell me the current weather in {city}.", "Can you check the weather for {city}?",
            "What's the temperature in {city}?", "I'm going to {city} today, what's the weather?",
            "Do I need an umbrella in {city}?", "Give me the weather report for {city}, please.",
            "How hot is it in {city}?", "Check {city} weather", "What's the forecast for {city}?",
            "Forecast {city}", "Is it cold or warm in {city}?", "Will it be sunny in {city} today?",
            "Is it snowing in {city}?", "weather in {city} now", "How cold is it in {city}?",
            "Weather report for {city}?", "What's it like outside in {city}?",
            "Should I wear a coat in {city} today?", "{city} weather today?", "Is it sunny in {city}?",
            "Temperature in {city}?", "What are conditions like in {city}?",
            "Current conditions in {city}, please.", "I'm visiting {city}. How's the weather there?",
            "Get the weather for {city}.", "Is it windy in {city}?", "Weather check for {city}, please.",
        ],
        "held_out": [
            "Any idea what the weather is doing in {city}?", "Could you look up the forecast for {city}?",
            "Is it cold in {city} at the moment?", "My flight lands in {city} tonight. Weather there?",
            "What should I expect weather-wise in {city}?",
        ],
    },
    "weather_unit": {
        "train": [
            "What's the weather in {city} in {unit}?", "Weather in {city} please, in {unit}.",
            "Tell me the temperature in {city} in degrees {unit}.", "How warm is {city}? Use {unit}.",
            "Forecast for {city} in {unit}, please.", "{city} temperature in {unit}?",
            "Weather for {city}, {unit} please.", "Give me the {city} weather in {unit}.",
        ],
        "held_out": ["Temperature in {city} ({unit}) please.", "In {unit}, how warm is it in {city}?"],
    },
    "time": {
        "train": [
            "What time is it in {city}?", "What's the local time in {city}?", "Tell me the time in {city}.",
            "Current time in {city}?", "time in {city}", "Can you check what time it is in {city}?",
            "Is it morning or evening in {city} right now?", "What's the clock showing in {city}?",
            "I need the current time in {city}.", "Tell me the hour in {city}.",
            "What's the time now in {city}?", "Clock in {city}?", "Time check: {city}",
            "Is it late in {city} now?", "Local time {city}", "Get the time in {city}.",
            "What time do they have in {city}?", "Is it night in {city} yet?",
        ],
        "held_out": [
            "Do you know the hour in {city} now?", "What hour is it over in {city}?",
            "I want to call someone in {city}; what's the time there?",
        ],
    },
    "convert": {
        "train": [
            "Convert {value} {from} to {to}.", "How many {to} is {value} {from}?", "{value} {from} in {to}?",
            "What is {value} {from} in {to}?", "Please convert {value} {from} into {to}.",
            "Can you turn {value} {from} into {to}?", "I have {value} {from}. How much is that in {to}?",
            "Change {value} {from} into {to}.", "{value} {from} to {to}", "Turn {value} {from} into {to}, please.",
            "How much is {value} {from} in {to}?", "{value} {from} is how many {to}?",
        ],
        "held_out": ["Express {value} {from} in {to}, please.", "{value} {from} equals how many {to}?",
                     "If I have {value} {from}, what's that in {to}?"],
    },
    "calc": {
        "train": [
            "What is {expr}?", "Calculate {expr}.", "Compute {expr} for me.", "{expr} = ?",
            "Can you work out {expr}?", "Please evaluate {expr}.", "What do you get for {expr}?",
            "Solve {expr}", "Figure out {expr}.", "math: {expr}", "Work out {expr}, please.", "{expr}",
            "How much is {expr}?", "What's {expr}?",
        ],
        "held_out": ["Quick math: {expr}", "Help me figure out {expr}.", "What does {expr} come to?"],
    },
    "search": {
        "train": [
            "Search the web for {topic}.", "Look up {topic}.", "Find information about {topic}.",
            "Can you search for {topic}?", "Google {topic} for me.", "I want to read about {topic}.",
            "Search: {topic}", "Find me some articles on {topic}.", "Find pages about {topic}.",
            "Browse online for {topic}.", "Search online: {topic}", "Get me web results on {topic}.",
            "Look up {topic} on the web.", "Do a web search for {topic}.", "Search for {topic}, please.",
        ],
        "held_out": ["Dig up some pages about {topic}.", "What can you find online about {topic}?",
                     "Run a search on {topic}."],
    },
    "search_n": {
        "train": [
            "Search for {topic} and give me {n} results.", "Find {n} results about {topic}.",
            "Look up {topic}, top {n} results only.", "Give me {n} links about {topic}.",
            "{n} web results on {topic}, please.", "Search {topic}, {n} results.",
        ],
        "held_out": ["I'd like {n} links on {topic}.", "Just {n} search results for {topic}, please."],
    },
    "fx": {
        "train": [
            "What is the exchange rate from {base} to {target}?", "How much is 1 {base} in {target}?",
            "{base} to {target} rate?", "Convert currency: {base} to {target} exchange rate.",
            "Check the {base}/{target} exchange rate.", "What's the current {base} to {target} rate?",
            "What is one {base} worth in {target}?", "Exchange rate {base} {target}",
            "{base} in {target} today?", "Rate from {base} to {target}, please.",
        ],
        "held_out": ["How many {target} do I get for one {base}?", "Rate between {base} and {target} today?",
                     "What's the {base}-{target} exchange rate right now?"],
    },
    "two_weather": {
        "train": [
            "What's the weather in {city} and {city2}?", "Compare the weather in {city} and {city2}.",
            "Weather for {city} and {city2}, please.", "How is the weather in {city} and in {city2}?",
            "Check the weather in both {city} and {city2}.", "Weather in {city} and {city2}?",
            "Forecast for {city} and {city2}.",
        ],
        "held_out": ["I'm choosing between {city} and {city2}; what's the weather in each?",
                     "Is it warmer in {city} or in {city2} today?"],
    },
    "two_time": {
        "train": [
            "What time is it in {city} and {city2}?", "Tell me the local time in {city} and {city2}.",
            "Current time in {city} and in {city2}?", "Time in {city} and {city2}?",
            "Clocks in {city} and {city2}, please.",
        ],
        "held_out": ["What are the clocks saying in {city} and {city2}?",
                     "Local times for {city} and {city2}, please?"],
    },
    "weather_time": {
        "train": [
            "What's the weather and the time in {city}?", "Tell me the time and weather in {city}.",
            "In {city}, what time is it and what's the weather?", "Time and weather for {city}?",
        ],
        "held_out": ["I'm calling a friend in {city}: what time is it there and how's the weather?"],
    },
    "two_calc": {
        "train": ["Calculate {expr} and {expr2}.", "What are {expr} and {expr2}?",
                  "Compute {expr} and also {expr2}."],
        "held_out": ["Work out both {expr} and {expr2}."],
    },
}
_FILLER_BEFORE = ["Hey, ", "Hi! ", "Quick question: ", "Please, ", "Hello. ", "OK, ", "So, ", "Hmm, "]
_FILLER_AFTER = [" Thanks!", " Thank you.", " Please.", " Cheers.", " Quickly, please.", " :)"]


def held_out_phrasings() -> list[str]:
    """Every phrasing only the evaluation uses (placeholders such as ``{city}`` unfilled)."""
    return [p for kind in PHRASINGS.values() for p in kind["held_out"]]


def _phrase(kind: str, split: str, rng: random.Random) -> str:
    """A phrasing of a request kind: training phrasings with fillers, or a held-out one."""
    if split != "train":
        return rng.choice(PHRASINGS[kind]["held_out"])
    text = rng.choice(PHRASINGS[kind]["train"])
    r = rng.random()
    if r < 0.12:
        filler = rng.choice(_FILLER_BEFORE)
        text = filler + (text[0].lower() + text[1:] if filler.endswith(", ") else text)
    elif r < 0.24:
        text = text + rng.choice(_FILLER_AFTER)
    return text

# ---------------------------------------------------------------------------------------------
# Argument values. Training draws most of them as made-up strings that no list contains, so
# that the only way to get a call right is to copy the value from the request.
# ---------------------------------------------------------------------------------------------

_EVAL_NAMES = {n.lower() for n in [c.replace("_", " ") for c in _CITIES_EVAL] + _CURRENCIES_EVAL}
_EVAL_NAME_WORDS = max(len(n.split()) for n in _EVAL_NAMES)


def eval_names_in(text: str) -> list[str]:
    """The evaluation cities and currency codes in ``text``, as whole words in any case (``"Split"``
    in ``"split the bill"`` counts: made-up values and training text must avoid even that).
    Words are runs of ASCII letters; a name of several words matches whatever separates them."""
    words = re.findall(r"[a-z]+", text.lower())
    return [" ".join(words[i:i + k]) for k in range(1, _EVAL_NAME_WORDS + 1) for i in range(len(words) - k + 1)
            if " ".join(words[i:i + k]) in _EVAL_NAMES]


_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
           "br", "ch", "dr", "gr", "kr", "pl", "sh", "st", "tr", "th", "qu", "y", "", "", "sk", "gh", "kh"]
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou", "ia", "y", "ea", "io", "ei", "au", "ee", "aa"]
_CODAS = ["", "", "", "", "n", "r", "s", "l", "m", "k", "th", "rg", "nd", "sk", "x", "t", "ng", "v", "z"]
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _random_word(rng: random.Random, syllables: int | None = None) -> str:
    """A pronounceable made-up word (``"vorkalen"``), or one time in four a random letter string
    (``"qxeltr"``): an argument value no list can contain and no language prior can guess."""
    if rng.random() < 0.25:
        return "".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 9)))
    n = syllables or rng.choice([1, 2, 2, 2, 3, 3, 4])
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(n))


def _made_up(make, rng: random.Random) -> str:
    """Draw ``make(rng)`` until the value contains no evaluation name."""
    value = make(rng)
    while eval_names_in(value) or len(value) < 2:
        value = make(rng)
    return value


def _random_city_once(rng: random.Random) -> str:
    name = _random_word(rng).capitalize()
    r = rng.random()
    if r < 0.14:
        return rng.choice(["San", "Port", "New", "Saint", "El", "Lake", "Fort", "Santa", "Nova", "St", "La",
                           "Los", "Le", "Bad", "Den", "Ciudad"]) + " " + name
    if r < 0.22:
        return name + " " + rng.choice(["City", "Bay", "Falls", "Springs", "Heights", "Town", "Beach", "Harbor"])
    if r < 0.32:
        return name + " " + _random_word(rng, 2).capitalize()
    if r < 0.37:
        return name + " " + rng.choice(["of", "de", "del", "on", "am"]) + " " + _random_word(rng, 2).capitalize()
    return name


# Pieces of training words: values spliced from them are made of the common sub-word tokens that
# real names consist of, so copying them needs more than a one-token match (the v2 model copied
# rare made-up pieces well but lost its place inside names like "Nashville": "Nashal").


def _piece_words() -> list[str]:
    return sorted({w.lower() for c in _CITIES_TRAIN for w in c.split("_") if len(w) > 3}
                  | {w for w in _TOPIC_NOUNS if len(w) > 3})


def _spliced_word(rng: random.Random) -> str:
    """Two or three 2-5 letter pieces of different training words, joined (``"chesbonkyo"``)."""
    out = ""
    for _ in range(rng.choice([2, 2, 3])):
        w = rng.choice(_piece_words())
        n = rng.randint(2, min(5, len(w)))
        i = rng.randint(0, len(w) - n)
        out += w[i:i + n]
    return out


def _spliced_city(rng: random.Random) -> str:
    """A made-up place name of one or two spliced words (``"Anchester Bonkyo"``)."""
    def make(r: random.Random) -> str:
        words = [_spliced_word(r).capitalize() for _ in range(r.choice([1, 1, 1, 2]))]
        return " ".join(words)

    return _made_up(make, rng)


def _random_city(rng: random.Random) -> str:
    """A made-up place name, sometimes of two to four words (``"Port Elvaro"``), never containing
    an evaluation city."""
    return _made_up(_random_city_once, rng)


def _city(split: str, rng: random.Random, focus: bool = False) -> str:
    # Training mixes real names with made-up ones, so that the model learns to copy whatever
    # the user wrote instead of recalling a list; evaluation uses real names never trained on.
    # The focus mix (see ``make_example``) makes half the names from common pieces.
    if focus and rng.random() < 0.5:
        return _spliced_city(rng)
    if split == "train" and rng.random() < 0.65:
        return _random_city(rng)
    return rng.choice(_CITIES_TRAIN if split == "train" else _CITIES_EVAL).replace("_", " ")


def _number(split: str, rng: random.Random) -> int | float:
    if split == "train":
        v = rng.choice([rng.randint(1, 100), rng.randint(1, 1000), round(rng.uniform(0.5, 500), 1),
                        rng.randint(1, 9999), round(rng.uniform(0.01, 999), 2)])
    else:  # values not drawn in training often: larger ranges, two decimals
        v = rng.choice([rng.randint(101, 5000), round(rng.uniform(0.1, 999), 2), rng.randint(1, 100)])
    return v


def _fmt_num(v: int | float) -> str:
    return str(v)


def _expr(split: str, rng: random.Random) -> tuple[str, float | int]:
    hi = rng.choice([100, 999]) if split == "train" else 999
    a, b, c = rng.randint(1, hi), rng.randint(1, hi), rng.randint(1, 20)
    form = rng.randrange(6)
    if form == 0:
        e = f"{a} + {b}"
    elif form == 1:
        e = f"{a} - {b}"
    elif form == 2:
        e = f"{a} * {b}"
    elif form == 3:
        e = f"{a} / {c}"
    elif form == 4:
        e = f"({a} + {b}) * {c}"
    else:
        e = f"{a} * {c} - {b}"
    value = eval(e, {"__builtins__": {}})  # digits and operators only, built above
    if isinstance(value, float):
        value = round(value, 4)
        if value == int(value):
            value = int(value)
    return e, value


def _currency_pair(split: str, rng: random.Random) -> tuple[str, str]:
    pool = _CURRENCIES_TRAIN if split == "train" else _CURRENCIES_EVAL + _CURRENCIES_TRAIN[:3]
    base, target = rng.sample(pool, 2)
    if split == "train":  # made-up codes too: copy the code, do not recall it
        def code() -> str:
            c = "".join(rng.choice(_LETTERS.upper()) for _ in range(3))
            return c if c not in _CURRENCIES_TRAIN and not eval_names_in(c) else code()

        if rng.random() < 0.6:
            base = code()
        if rng.random() < 0.6:
            target = code()
        if base == target:
            target = target[:2] + ("A" if target[2] != "A" else "B")
    return base, target


_TOPIC_FORMS = ["the history of {a}", "how {a} works", "{b} {a}", "the best {a}", "{a} for beginners",
                "{a} and {c}", "{b} {a} tips", "the rules of {a}", "{a} news", "how to make {a}",
                "the life of {p}", "{p}", "{a}", "learning {a}", "the invention of {a}", "how {a} are made",
                "{a} in {q}", "why {a} {v}", "{b} {a} near {q}", "the science of {a}"]
_TOPIC_NOUNS = """kites pottery tennis lighthouses volcanoes robots rivers canals bridges trains bicycles
satellites telescopes pianos violins drums poetry novels comics cheese noodles dumplings soup bread
tea spices gardens forests deserts oceans islands caves maps coins stamps clocks engines rockets
drones cameras printers keyboards fonts databases networks passwords algorithms spreadsheets
penguins whales wolves owls horses cats dogs frogs butterflies ants mushrooms cactus roses
glass paper lamps ships tunnels mirrors batteries magnets crystals storms tigers lizards""".split()
_TOPIC_VERBS = "glow sing migrate float fly change sleep grow shine vanish".split()
_TOPIC_ADJ = """cheap fast simple ancient modern famous small electric healthy quiet local free
classic rare strange easy""".split()


def _topic(split: str, rng: random.Random, focus: bool = False) -> str:
    """A search query: a listed topic, or (training only) a new one from words and made-up names
    (``focus``: half of the made-up words spliced from common pieces)."""
    if split != "train":
        return rng.choice(_TOPICS_EVAL)
    if rng.random() < 0.3:
        return rng.choice(_TOPICS_TRAIN)

    def made_up_word(r: random.Random, syllables: int | None = None) -> str:
        return _spliced_word(r) if focus and r.random() < 0.5 else _random_word(r, syllables)

    def make(r: random.Random) -> str:
        def noun() -> str:
            return r.choice(_TOPIC_NOUNS) if r.random() < 0.5 else made_up_word(r)

        person = made_up_word(r, 2).capitalize() + " " + made_up_word(r, r.choice([2, 3])).capitalize()
        return r.choice(_TOPIC_FORMS).format(a=noun(), b=r.choice(_TOPIC_ADJ), c=noun(), p=person,
                                             q=_random_city_once(r), v=r.choice(_TOPIC_VERBS))

    return _made_up(make, rng)


def _call(name: str, args: dict) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": args}}

_SYSTEMS = [None, "You are a helpful assistant.", "You are a concise assistant.",
            "You are a friendly assistant. Keep answers short.",
            "You are a helpful assistant with access to tools."]
# Tool results and the answers that use them
# ---------------------------------------------------------------------------------------------

def _result(call: dict, rng: random.Random) -> dict:
    """A plausible tool result for one call."""
    name, a = call["function"]["name"], call["function"]["arguments"]
    if name == "get_weather":
        unit = a.get("unit", "celsius")
        t = rng.randint(-10, 38)
        if unit == "fahrenheit":
            t = round(t * 9 / 5 + 32)
        return {"city": a["city"], "temperature": t, "unit": unit, "condition": rng.choice(_CONDITIONS)}
    if name == "get_time":
        h, m = rng.randint(0, 23), rng.randint(0, 59)
        return {"city": a["city"], "time": f"{h:02d}:{m:02d}"}
    if name == "convert_units":
        v, f, t = a["value"], a["from_unit"], a["to_unit"]
        if (f, t) == ("celsius", "fahrenheit"):
            r = v * 9 / 5 + 32
        elif (f, t) == ("fahrenheit", "celsius"):
            r = (v - 32) * 5 / 9
        else:
            r = v * _UNIT_FACTORS[(f, t)]
        return {"value": round(r, 2), "unit": t}
    if name == "calculate":
        return {"result": a["_value"]} if "_value" in a else {"result": 0}
    if name == "web_search":
        q = a["query"]
        n = min(a.get("max_results", 2), 3)
        return {"results": [{"title": f"{q.capitalize()} - {src}", "url": f"https://{src.lower()}.org/{i + 1}"}
                            for i, src in enumerate(rng.sample(["Wikipedia", "Britannica", "Guide", "News",
                                                                  "Blog", "Forum"], n))]}
    if name == "get_exchange_rate":
        return {"base": a["base"], "target": a["target"], "rate": round(rng.uniform(0.01, 150), 4)}
    raise ValueError(name)


def _answer_for(call: dict, res: dict, rng: random.Random) -> str:
    """One sentence that reports a tool result."""
    name, a = call["function"]["name"], call["function"]["arguments"]
    if name == "get_weather":
        sym = "°C" if res["unit"] == "celsius" else "°F"
        return rng.choice([
            f"It is currently {res['temperature']}{sym} and {res['condition']} in {res['city']}.",
            f"In {res['city']} it's {res['condition']} with a temperature of {res['temperature']}{sym}.",
            f"{res['city']}: {res['condition']}, {res['temperature']}{sym}.",
        ])
    if name == "get_time":
        return rng.choice([f"The local time in {res['city']} is {res['time']}.",
                           f"It is {res['time']} in {res['city']} right now.",
                           f"In {res['city']} it's {res['time']}."])
    if name == "convert_units":
        return rng.choice([f"{_fmt_num(a['value'])} {a['from_unit']} is {res['value']} {res['unit']}.",
                           f"That is {res['value']} {res['unit']}.",
                           f"{_fmt_num(a['value'])} {a['from_unit']} equals about {res['value']} {res['unit']}."])
    if name == "calculate":
        return rng.choice([f"{a['expression']} = {res['result']}.", f"The answer is {res['result']}.",
                           f"{a['expression']} equals {res['result']}."])
    if name == "web_search":
        lines = "\n".join(f"- {r['title']} ({r['url']})" for r in res["results"])
        return rng.choice([f"Here is what I found about {a['query']}:\n{lines}",
                           f"Top results for {a['query']}:\n{lines}"])
    if name == "get_exchange_rate":
        return rng.choice([f"1 {res['base']} is worth {res['rate']} {res['target']}.",
                           f"The {res['base']} to {res['target']} rate is {res['rate']}."])
    raise ValueError(name)


def _describe(call: dict) -> str:
    """How the reasoning names a planned call."""
    name, a = call["function"]["name"], call["function"]["arguments"]
    args = ", ".join(f"{k} {v}" for k, v in a.items() if not k.startswith("_"))
    return f"{name} with {args}"


# ---------------------------------------------------------------------------------------------


def stated_values(call: dict, result: dict) -> list[str]:
    """The strings an answer must contain to state a tool result correctly.

    Weather: city, temperature (with its sign) and condition; time: city and time; unit
    conversion: the converted value; calculation: the result; exchange rate: the rate; web
    search: every result's URL. Numbers as the result writes them (``12``, ``0.8134``).
    """
    name = call["function"]["name"]
    if name == "get_weather":
        return [result["city"], str(result["temperature"]), result["condition"]]
    if name == "get_time":
        return [result["city"], result["time"]]
    if name == "convert_units":
        return [str(result["value"])]
    if name == "calculate":
        return [str(result["result"])]
    if name == "get_exchange_rate":
        return [str(result["rate"])]
    if name == "web_search":
        return [r["url"] for r in result["results"]]
    raise ValueError(name)

# ---------------------------------------------------------------------------------------------
# Plain requests: no tool fits, whatever tools are offered. The model answers directly.
# ---------------------------------------------------------------------------------------------

_CHAT = [  # (user phrasings, answers): small talk and requests about the assistant itself
    (["Hi!", "Hello", "Hey there", "Good morning!", "hello!", "Hi, who are you?", "Greetings", "Yo"],
     ["Hello! How can I help you today?", "Hi! What can I do for you?",
      "Hello! I can check the weather, the time, convert units, do math, look up exchange rates "
      "and search the web. What do you need?"]),
    (["Thanks!", "Thank you so much.", "thanks, that helps", "Great, thanks.", "Cheers!"],
     ["You're welcome!", "Happy to help!", "Anytime! Let me know if you need anything else."]),
    (["What can you do?", "What are you able to help with?", "Help", "What tools do you have?"],
     ["I can answer with the tools I am given: weather, local time, unit conversion, "
      "calculations, exchange rates and web search.",
      "I am a tiny assistant. Ask me about the weather, the time in a city, unit conversions, "
      "arithmetic, exchange rates or a web search."]),
    (["Tell me a joke.", "Say something funny.", "Make me laugh."],
     ["Why did the function return early? It had a prior engagement.",
      "I told my computer a joke about UDP. I am not sure it got it.",
      "Why do programmers prefer dark mode? Because light attracts bugs."]),
    (["How are you?", "How are you doing today?", "Are you ok?"],
     ["I'm doing well, thanks for asking! How can I help?", "All good here. What can I do for you?"]),
    (["Goodbye", "Bye!", "See you later."],
     ["Goodbye! Have a great day.", "See you! Come back any time."]),
    (["Who made you?", "Are you a real person?", "What model are you?"],
     ["I am a tiny demo model trained from scratch by the Response Template Playground project.",
      "I'm a small chat model built for the playground, not a person."]),
    (["Write a haiku.", "Write a short poem.", "Give me a haiku about rain."],
     ["Soft rain on the roof\ntokens falling one by one\nthe parser listens",
      "Quiet morning light\na kettle hums on the stove\nthe day opens slow"]),
]

# (country, capital): capitals that are no evaluation city
_CAPITALS = [("France", "Paris"), ("Germany", "Berlin"), ("Spain", "Madrid"), ("Italy", "Rome"),
             ("Portugal", "Lisbon"), ("Ireland", "Dublin"), ("Austria", "Vienna"), ("Poland", "Warsaw"),
             ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"), ("Denmark", "Copenhagen"),
             ("Greece", "Athens"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"), ("Japan", "Tokyo"),
             ("South Korea", "Seoul"), ("Thailand", "Bangkok"), ("Vietnam", "Hanoi"), ("Peru", "Lima"),
             ("Colombia", "Bogota"), ("Chile", "Santiago"), ("Argentina", "Buenos Aires"), ("Cuba", "Havana"),
             ("Ukraine", "Kyiv"), ("Hungary", "Budapest"), ("China", "Beijing"), ("India", "New Delhi"),
             ("the United Kingdom", "London"), ("the Netherlands", "Amsterdam"), ("Belgium", "Brussels"),
             ("Latvia", "Riga"), ("Estonia", "Tallinn"), ("Bulgaria", "Sofia"), ("Romania", "Bucharest"),
             ("Serbia", "Belgrade"), ("Croatia", "Zagreb"), ("Iran", "Tehran"), ("Qatar", "Doha"),
             ("Georgia", "Tbilisi"), ("Armenia", "Yerevan"), ("Nepal", "Kathmandu"), ("Ghana", "Accra"),
             ("Uganda", "Kampala"), ("Rwanda", "Kigali"), ("Senegal", "Dakar"), ("Uruguay", "Montevideo"),
             ("Mexico", "Mexico City"), ("Jordan", "Amman"), ("Ethiopia", "Addis Ababa"), ("Lebanon", "Beirut"),
             ("Australia", "Canberra"), ("Brazil", "Brasilia")]
_CAPITAL_QUESTIONS = {"train": ["What is the capital of {country}?", "What's the capital city of {country}?",
                                "Which city is the capital of {country}?", "Name the capital of {country}."],
                      "held_out": ["Capital of {country}?", "Do you know the capital of {country}?"]}
_CAPITAL_ANSWERS = ["The capital of {country} is {capital}.", "{capital} is the capital of {country}.",
                    "It's {capital}."]

_FACTS = [  # (questions, answer): general questions no tool answers
    (["How many legs does a spider have?", "Spiders have how many legs?"], "A spider has eight legs."),
    (["How many legs does an insect have?"], "Insects have six legs."),
    (["What is the largest planet?", "Which planet is the biggest?"],
     "Jupiter is the largest planet in the solar system."),
    (["What is the closest star to Earth?"], "The Sun is the closest star to Earth."),
    (["What is photosynthesis?", "Explain photosynthesis briefly."],
     "Photosynthesis is how plants turn sunlight, water and carbon dioxide into sugar and oxygen."),
    (["What is gravity?"], "Gravity is the force that pulls masses toward each other."),
    (["Why do we have seasons?"], "Seasons happen because the Earth's axis is tilted as it orbits the Sun."),
    (["What is DNA?"], "DNA is the molecule that carries the genetic instructions of living things."),
    (["Who wrote Romeo and Juliet?"], "William Shakespeare wrote Romeo and Juliet."),
    (["Who painted the Starry Night?"], "Vincent van Gogh painted The Starry Night."),
    (["Who discovered penicillin?"], "Alexander Fleming discovered penicillin in 1928."),
    (["Who was the first person on the moon?"], "Neil Armstrong was the first person to walk on the moon."),
    (["What do cows eat?"], "Cows mostly eat grass and hay."),
    (["What do bees make?"], "Bees make honey and wax."),
    (["How many days are in a week?"], "There are seven days in a week."),
    (["How many months have 31 days?"], "Seven months have 31 days."),
    (["What colour do you get by mixing blue and yellow?", "Blue plus yellow makes what colour?"],
     "Mixing blue and yellow gives green."),
    (["What is the opposite of hot?"], "The opposite of hot is cold."),
    (["What is a synonym for happy?", "Give me another word for happy."], "Joyful, cheerful or glad."),
    (["What is the plural of mouse?"], "The plural of mouse is mice."),
    (["How do you say thank you in Spanish?"], "In Spanish, thank you is \"gracias\"."),
    (["How do you say hello in German?"], "In German, hello is \"Hallo\"."),
    (["What language do they speak in Japan?"], "People in Japan speak Japanese."),
    (["What is the longest river in the world?"], "The Nile and the Amazon are the two longest rivers."),
    (["What is the highest mountain?", "Which mountain is the tallest on Earth?"],
     "Mount Everest is the highest mountain above sea level."),
    (["What is the freezing point of water?"], "Water freezes at 0 degrees Celsius."),
    (["What is a prime number?"], "A prime number has exactly two divisors: 1 and itself."),
    (["What is an API?", "Explain what an API is."],
     "An API is a defined way for programs to talk to each other."),
    (["What is JSON?"], "JSON is a text format for structured data, built from objects, arrays, strings and numbers."),
    (["What is a tokenizer?"], "A tokenizer splits text into the tokens a language model reads."),
    (["What is Python?"], "Python is a popular programming language known for its readable syntax."),
    (["What is the internet?"], "The internet is a global network of connected computers."),
    (["Why is the ocean salty?"], "Rivers carry dissolved minerals into the sea, and they stay when water evaporates."),
    (["How do plants drink water?"], "Plants take up water through their roots."),
    (["What is a leap year?"], "A leap year has 366 days, with an extra day on February 29."),
    (["Give me a tip for staying focused.", "How can I focus better?"],
     "Work in short blocks, put your phone away and take a break every half hour."),
    (["How do I boil an egg?"], "Put the egg in boiling water for about eight minutes, then cool it in cold water."),
    (["Suggest a name for a dog.", "What should I name my puppy?"], "How about Biscuit, Luna or Max?"),
    (["Recommend a movie.", "What movie should I watch tonight?"],
     "Maybe a classic comedy, or a nature documentary if you want something calm."),
    (["What's your favourite food?"], "I don't eat, but pizza sounds popular."),
    (["Are you smart?", "Are you clever?"], "I'm a very small model, so I keep to simple things."),
    (["Can you keep a secret?"], "I don't remember anything after our chat, so yes."),
    (["What is the meaning of life?"], "Many say it's what you make of it. Some say 42."),
    (["Tell me something interesting.", "Tell me a fun fact."],
     "Honey never spoils: jars thousands of years old were still edible."),
    (["Tell me a fact about cats."], "Cats sleep for about twelve to sixteen hours a day."),
    (["Tell me a fact about whales."], "Blue whales are the largest animals that have ever lived."),
    (["What is a noun?"], "A noun is a word for a person, place, thing or idea."),
    (["What rhymes with moon?"], "Spoon, tune and June rhyme with moon."),
    (["Spell the word banana.", "How do you spell banana?"], "B-A-N-A-N-A."),
    (["Is the earth round?"], "Yes, the Earth is roughly a sphere."),
    (["Do fish sleep?"], "Yes, fish rest, though most do not close their eyes."),
    (["How many continents are there?"], "There are seven continents."),
    (["What is the smallest country?"], "Vatican City is the smallest country in the world."),
    (["Summarize what you are in one sentence."], "I'm a tiny chat model that calls tools and answers short questions."),
]

# Held out: plain questions the evaluation asks and training never shows (checked in tests).
_PLAIN_HELD_OUT = [
    "Why is the sky blue?", "Tell me a fact about octopuses.", "Who wrote Hamlet?", "What do pandas eat?",
    "Explain recursion in one sentence.", "Recommend a book for the weekend.", "What's the largest ocean?",
    "How do magnets work?", "Is a tomato a fruit?", "What language is spoken in Brazil?",
    "Can you help me name my cat?", "Who painted the Mona Lisa?", "What is the boiling point of water?",
    "Say good night in French.", "What rhymes with cat?", "How many sides does a hexagon have?",
    "Heya, anybody there?", "Morning! Who am I talking to?", "Give me a motivational quote.",
    "What's a verb?", "Why do leaves change colour?", "What is a black hole?",
    "How old is the universe?", "Describe autumn in one sentence.",
]


def _plain(split: str, rng: random.Random) -> tuple[str, str]:
    """A request no tool answers, and its answer (for held-out questions: empty, any direct
    answer without a tool call counts)."""
    r = rng.random()
    if r < 0.3:
        country, capital = rng.choice(_CAPITALS)
        if split != "train":
            return rng.choice(_CAPITAL_QUESTIONS["held_out"]).format(country=country), ""
        question = rng.choice(_CAPITAL_QUESTIONS["train"]).format(country=country)
        return question, rng.choice(_CAPITAL_ANSWERS).format(country=country, capital=capital)
    if split != "train":
        return rng.choice(_PLAIN_HELD_OUT), ""
    if r < 0.55:
        users, answers = rng.choice(_CHAT)
        return rng.choice(users), rng.choice(answers)
    questions, answer = rng.choice(_FACTS)
    return rng.choice(questions), answer


def plain_training_questions() -> list[str]:
    """Every plain question training can ask (for the overlap checks)."""
    out = [u for users, _ in _CHAT for u in users] + [q for qs, _ in _FACTS for q in qs]
    out += [p.format(country=c) for p in _CAPITAL_QUESTIONS["train"] for c, _ in _CAPITALS]
    return out


def plain_held_out_questions() -> list[str]:
    """Every plain question only the evaluation asks."""
    return _PLAIN_HELD_OUT + [p.format(country=c) for p in _CAPITAL_QUESTIONS["held_out"] for c, _ in _CAPITALS]

# ---------------------------------------------------------------------------------------------
# Requests and examples
# ---------------------------------------------------------------------------------------------

_KINDS = ["weather", "weather_unit", "time", "convert", "calc", "search", "search_n", "fx",
          "two_weather", "two_time", "weather_time", "two_calc"]
_KIND_WEIGHTS = [12, 4, 9, 9, 9, 9, 3, 7, 6, 3, 4, 2]
# the focus mix: two-call requests (1 of 19 right in v2's evaluation) and multi-piece values
_FOCUS_KIND_WEIGHTS = [8, 4, 7, 8, 7, 9, 3, 6, 10, 6, 7, 4]


def _two_cities(split: str, rng: random.Random, focus: bool = False) -> tuple[str, str]:
    c1, c2 = _city(split, rng, focus), _city(split, rng, focus)
    while c2 == c1:
        c2 = _city(split, rng, focus)
    return c1, c2


def _request(split: str, rng: random.Random, kind: str | None = None, focus: bool = False,
             boundary: bool = False, exact: bool = False) -> tuple[str, list[dict]]:
    """A user message and the calls that answer it (one or two); ``focus``: the focus mix's
    request kinds and values; ``boundary``, ``exact``: the boundary or exact mix's (see
    ``make_example``)."""
    if exact:
        return _exact_request(rng, kind)
    if boundary:
        return _boundary_request(rng, kind)
    kind = kind or rng.choices(_KINDS, weights=_FOCUS_KIND_WEIGHTS if focus else _KIND_WEIGHTS)[0]
    phrase = _phrase(kind, split, rng)
    if kind == "weather":
        c = _city(split, rng, focus)
        return phrase.format(city=c), [_call("get_weather", {"city": c})]
    if kind == "weather_unit":
        c, u = _city(split, rng, focus), rng.choice(["celsius", "fahrenheit"])
        return phrase.format(city=c, unit=u), [_call("get_weather", {"city": c, "unit": u})]
    if kind == "time":
        c = _city(split, rng, focus)
        return phrase.format(city=c), [_call("get_time", {"city": c})]
    if kind == "convert":
        f, t = rng.choice(_UNIT_PAIRS)
        v = _number(split, rng)
        text = phrase.format(value=_fmt_num(v), **{"from": rng.choice(_UNIT_NAMES[f]), "to": rng.choice(_UNIT_NAMES[t])})
        return text, [_call("convert_units", {"value": v, "from_unit": f, "to_unit": t})]
    if kind == "calc":
        e, val = _expr(split, rng)
        return phrase.format(expr=e), [_call("calculate", {"expression": e, "_value": val})]
    if kind == "search":
        tp = _topic(split, rng, focus)
        return phrase.format(topic=tp), [_call("web_search", {"query": tp})]
    if kind == "search_n":
        tp, n = _topic(split, rng, focus), rng.randint(1, 10)
        return phrase.format(topic=tp, n=n), [_call("web_search", {"query": tp, "max_results": n})]
    if kind == "fx":
        b, t = _currency_pair(split, rng)
        return phrase.format(base=b, target=t), [_call("get_exchange_rate", {"base": b, "target": t})]
    if kind == "two_weather":
        c1, c2 = _two_cities(split, rng, focus)
        return (phrase.format(city=c1, city2=c2),
                [_call("get_weather", {"city": c1}), _call("get_weather", {"city": c2})])
    if kind == "two_time":
        c1, c2 = _two_cities(split, rng, focus)
        return phrase.format(city=c1, city2=c2), [_call("get_time", {"city": c1}), _call("get_time", {"city": c2})]
    if kind == "weather_time":
        c = _city(split, rng, focus)
        calls = [_call("get_weather", {"city": c}), _call("get_time", {"city": c})]
        text = phrase.format(city=c)
        if text.lower().index("time") < text.lower().index("weather"):
            calls.reverse()
        return text, calls
    e1, v1 = _expr(split, rng)
    e2, v2 = _expr(split, rng)
    return (phrase.format(expr=e1, expr2=e2),
            [_call("calculate", {"expression": e1, "_value": v1}), _call("calculate", {"expression": e2, "_value": v2})])


# ---------------------------------------------------------------------------------------------
# The boundary mix (part 4 of the shipped model's training): where a value ends, long names,
# two calls of mixed tools, exchange rates that name both currencies, and plain questions the
# model cannot know, answered briefly and honestly. v3 copied the words after a value with it
# ("Fez tonight"), cut long names, made one call for two requests, dropped the target currency,
# and looped or called get_weather on plain questions unlike the trained ones.
# ---------------------------------------------------------------------------------------------

# What users write after a value: time words, politeness, clauses, punctuation and a new
# sentence. Lower case (or after punctuation), so a value's end is where its capitals stop.
_TRAILERS = [
    " today", " tonight", " tomorrow", " this weekend", " right now", " now", " at the moment",
    " currently", " this morning", " this afternoon", " this evening", " at the minute", " these days",
    " later today", " just now", " as we speak", " this week", " at noon", " before noon",
    ", please", " please", " for me", " for me, please", ", thanks", " thanks", " if you can",
    " before I leave", " where my sister lives", " where I'm heading", " for my trip", " on my trip",
    " where we are meeting", " because I fly there soon", " where my parents live", " first",
    " exactly", " again", ", quickly", " by any chance", " when you get a chance",
    ". Thanks!", ". I'm packing now.", "! I need to know.", ". Asking for a friend.", " :)",
    ", I'm going there soon.", "; my meeting is there.", ". Cheers.", " - thank you!",
    " or not", " or what", " (I'm travelling)", " (for work)", " btw", "...",
]

# New training phrasings of the boundary mix (none matches a held-out phrasing: see
# ``overlap_with_training``); values mid-sentence, followed by words, or named once and
# referred to as "there".
_BOUNDARY_PHRASINGS = {
    "weather": [
        "I'm driving to {city} this weekend. What's the weather like there?",
        "Heading to {city} tomorrow; how's the weather there?", "We land in {city} at noon. Is it raining there?",
        "My sister lives in {city}. Is it warm there today?", "Weather in {city} tonight?",
        "Is it sunny in {city} today or not?", "What's the weather in {city} like this afternoon?",
        "In {city} right now, is it raining?", "{city}: what's the weather?", "{city} - is it cold there?",
        "Could you check whether it is snowing in {city} right now?", "Is it stormy in {city} tonight?",
        "What's the weather doing in {city} this morning?", "Is the weather nice in {city} for a walk?",
        "I'm off to {city} later. Weather?", "The weather in {city}, please, before I go out.",
        "Tell me how warm it is in {city} at the moment.", "Is it foggy over {city} this evening?",
        "Need the weather for {city} for my trip.", "Can I go hiking in {city} today, weather-wise?",
        "How is it outside in {city} these days?", "We are meeting in {city} tomorrow; check the weather there.",
        "Weather report: {city}, today.", "What's the temperature like in {city} right now?",
        "Is it warm and sunny in {city}?", "Wind and rain in {city} today?", "Hot or cold in {city} right now?",
        "Is it dry or wet in {city} this morning?", "Friends and family are in {city}; is it nice there?",
    ],
    "time": [
        "My brother is in {city}. What time is it there?", "What time is it in {city} right now?",
        "Is it already evening in {city} now?", "{city}: what's the time?", "Local time in {city}, please.",
        "I have a call with {city} soon; what time is it there?", "What's the time in {city} at the moment?",
        "In {city}, what time is it now?", "Time in {city} right now, please.", "Is it past noon in {city} yet?",
        "Can you tell me the current time over in {city}?", "Our team sits in {city}. What's their local time?",
        "Check the clock in {city} for me.", "What time do they have in {city} today?",
        "Is it day or night in {city}?", "Morning or afternoon in {city} now?",
        "Hours and minutes in {city} right now?", "Family in {city}: is it too late to call them?",
    ],
    "fx": [
        "How many {target} is one {base} worth?", "How many {target} will one {base} buy?",
        "How much {target} is one {base} right now?", "{target} per {base}?", "How many {target} per {base}?",
        "Convert 1 {base} to {target}.", "I need {target}. What's the rate from {base}?",
        "Exchange {base} for {target}: what's the rate?", "What's one {base} in {target} today?",
        "{base} -> {target} rate", "How strong is the {base} against the {target} today?",
        "Give me the {base}/{target} rate.", "What rate do I get going from {base} to {target}?",
        "The {base} to {target} exchange rate, please.", "I'm paying in {target}; how much is a {base}?",
        "What is {base} worth in {target}?", "Swap {base} into {target}: current rate?",
        "I have {base} and need {target}. Exchange rate?", "Rate for {base} to {target} right now?",
        "How much {target} do I need for a single {base}?", "Show the {base}/{target} exchange rate.",
        "What's the exchange rate between {base} and {target}?", "Exchange rate between {base} and {target}, please.",
        "Compare {base} and {target}: how much {target} is one {base}?", "{base} and {target}, what's the rate?",
    ],
    "search": [
        "Pull up some articles about {topic}.", "Find me a few pages on {topic}.", "Could you get some links about {topic}?",
        "Show me what the web says about {topic}.", "Do a quick search on {topic}.", "Start a search for {topic}.",
        "Look online for anything about {topic}.", "I'm curious about {topic}; search the web.",
        "Search the internet for {topic}, please.", "Fetch some web pages on {topic}.",
    ],
    "search_n": [
        "I want {n} pages about {topic}.", "Could I get {n} results on {topic}?", "{n} links on {topic}, please.",
        "Show me {n} articles about {topic}.", "Only {n} results for {topic}.", "Search {topic} and keep it to {n} results.",
    ],
    "two_weather": [
        "Which is sunnier, {city} or {city2}?", "Weather: {city} vs {city2}?", "Is {city} colder than {city2} today?",
        "{city} or {city2}: where is it warmer right now?", "What's the weather in {city} and what about {city2}?",
        "Tell me the weather in {city}, then in {city2}.", "How's the weather in {city}? And in {city2}?",
        "Weather in {city} today, and in {city2}?", "Is it raining in {city} or in {city2}?",
        "Check the weather for {city} and also for {city2}, please.", "Compare {city} with {city2} for weather.",
        "I might go to {city} or {city2} this weekend. How's the weather in both?",
        "Where is it windier right now, {city} or {city2}?", "Weather for {city} and {city2} this evening?",
    ],
    "two_time": [
        "What time is it in {city}, and in {city2}?", "Time in {city} vs {city2}?", "Is it later in {city} or {city2}?",
        "Clocks: {city} and {city2}.", "Show me the local times of {city} and {city2}.",
        "What do the clocks read in {city} and {city2}?", "Local time in {city} and in {city2} right now?",
        "What time is it now in {city}? And in {city2}?", "Tell me the time in {city}, then in {city2}.",
        "My friends are in {city} and {city2}; what time is it for each of them?",
    ],
    "weather_time": [
        "In {city}, what's the time, and is it raining there?", "{city}: local time and weather, please.",
        "Time in {city}? And the weather there?", "What's the hour and the weather in {city}?",
        "I'm phoning my aunt in {city}. What time is it there, and what's the weather like?",
        "Weather and local time for {city} right now?", "What time is it in {city} and how warm is it there?",
        "How's the weather in {city}, and what time is it there?", "Check the weather in {city}, and the time there too.",
        "For {city}: the time, then the weather.", "I'm landing in {city} soon. What's the time and weather there?",
        "Is it night in {city} yet, and is it cold there?",
    ],
    "two_calc": [
        "Solve {expr} and {expr2}.", "{expr} and {expr2}?", "Two sums: {expr}, {expr2}.",
        "Calculate both {expr} and {expr2}.", "What is {expr}? And {expr2}?", "First {expr}, then {expr2}, please.",
    ],
}

# Which tool a two-call request names first (weather and time of one city)
_TIME_WORDS = re.compile(r"\b(?:time|times|hour|clock|clocks|night|evening)\b", re.I)
_WEATHER_WORDS = re.compile(r"\b(?:weather|raining|rain|warm|cold|sunny|forecast|temperature)\b", re.I)

# Place-name endings: a word or piece followed by one of these makes a long name whose start is
# itself a word ("Harborage", "Lanternburg"), where a copy must not stop early.
_NAME_ENDINGS = ["age", "burg", "ville", "ton", "stad", "grad", "pur", "abad", "holm", "vik", "heim", "ford",
                 "mouth", "chester", "field", "minster", "polis", "ona", "ia", "ora", "berg", "dorf", "sund",
                 "borough", "wick", "caster", "ham", "hampton", "ridge", "lund", "ova", "ino", "asso", "ella"]
_NAME_STARTS = """anchor harbor lantern maple river silver copper stone hollow amber ember falcon north
south east west iron winter summer spring autumn salt green red black white gold cedar oak pine ash
elm willow raven crow fox wolf bear hart lark swan bell mill brook moor marsh hill dale glen ford
bridge castle church king queen port mark star sun moon""".split()


def _long_city(rng: random.Random) -> str:
    """A long made-up place name: three or four pieces of training words, or a word and a
    place-name ending (``"Harborage"``, ``"Cedarminster"``), sometimes two such words."""
    def word(r: random.Random) -> str:
        if r.random() < 0.5:
            return "".join(_spliced_word(r) for _ in range(r.choice([1, 2]))).capitalize()[:16]
        start = r.choice(_NAME_STARTS) if r.random() < 0.6 else _spliced_word(r)
        return (start + r.choice(_NAME_ENDINGS)).capitalize()

    def make(r: random.Random) -> str:
        return " ".join(word(r) for _ in range(r.choice([1, 1, 1, 2])))

    return _made_up(make, rng)


def _boundary_city(rng: random.Random) -> str:
    """A city for the boundary mix: a long made-up name two times in five, else as the focus mix."""
    return _long_city(rng) if rng.random() < 0.4 else _city("train", rng, focus=True)


def _trail(phrasing: str, rng: random.Random) -> str:
    """``phrasing`` with words after one of its values: a trailer goes between a city or currency
    placeholder and the punctuation (or end) that follows it."""
    spots = [m.end() for m in re.finditer(r"\{(?:city|city2|base|target)\}(?=[?.!,;:]|$)", phrasing)]
    if not spots:
        return phrasing
    at = rng.choice(spots)
    rest = phrasing[at:]
    trailers = _TRAILERS if rest in ("", "?", ".", "!") else [t for t in _TRAILERS if t[-1].isalpha()]
    trailer = rng.choice(trailers)
    if not trailer[-1].isalpha():  # a trailer that ends the sentence replaces its stop
        rest = ""
    return phrasing[:at] + trailer + rest


# Mixed pairs: two requests of different tools in one message, joined as users do
_PAIR_KINDS = ["weather", "time", "convert", "calc", "search", "fx"]
_PAIR_JOINS = [" And ", " Also, ", " Then ", " Plus, ", " After that, ", " Oh, and "]


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text


def _boundary_request(rng: random.Random, kind: str | None = None) -> tuple[str, list[dict]]:
    """A request of the boundary mix and its calls (see the section comment above)."""
    kind = kind or rng.choices(
        ["weather", "time", "fx", "two_weather", "two_time", "weather_time", "two_calc", "pair",
         "convert", "calc", "search", "weather_unit", "search_n"],
        weights=[12, 8, 12, 5, 4, 5, 2, 5, 5, 4, 6, 2, 3])[0]
    if kind == "pair":
        k1, k2 = rng.sample(_PAIR_KINDS, 2)
        u1, c1 = _boundary_request(rng, k1)
        u2, c2 = _boundary_request(rng, k2)
        if not any(u2.startswith(str(v)) for c in c2 for v in c["function"]["arguments"].values()):
            u2 = _lower_first(u2)  # a value that starts the request keeps its capitals
        if rng.random() < 0.5 and u1[-1:] in "?.":
            text = u1[:-1] + rng.choice([" and ", ", and ", "; also "]) + u2
        else:
            text = u1 + rng.choice(_PAIR_JOINS) + u2
        return text, c1 + c2
    pool = _BOUNDARY_PHRASINGS.get(kind, [])
    if pool and rng.random() < 0.6:
        phrase = rng.choice(pool)
    else:
        phrase = _phrase(kind, "train", rng)
    if rng.random() < 0.5:
        phrase = _trail(phrase, rng)
    if kind in ("weather", "time"):
        c = _boundary_city(rng)
        return phrase.format(city=c), [_call("get_weather" if kind == "weather" else "get_time", {"city": c})]
    if kind in ("two_weather", "two_time"):
        c1 = _boundary_city(rng)
        c2 = _boundary_city(rng)
        while c2 == c1:
            c2 = _boundary_city(rng)
        name = "get_weather" if kind == "two_weather" else "get_time"
        return phrase.format(city=c1, city2=c2), [_call(name, {"city": c1}), _call(name, {"city": c2})]
    if kind == "weather_time":
        c = _boundary_city(rng)
        text = phrase.format(city=c)
        probe = text.replace(c, " ")
        t, w = _TIME_WORDS.search(probe), _WEATHER_WORDS.search(probe)
        calls = [_call("get_weather", {"city": c}), _call("get_time", {"city": c})]
        if t and (not w or t.start() < w.start()):
            calls.reverse()
        return text, calls
    if kind == "fx":
        b, t = _currency_pair("train", rng)
        return phrase.format(base=b, target=t), [_call("get_exchange_rate", {"base": b, "target": t})]
    if kind == "two_calc":
        (e1, v1), (e2, v2) = _expr("train", rng), _expr("train", rng)
        return (phrase.format(expr=e1, expr2=e2),
                [_call("calculate", {"expression": e1, "_value": v1}), _call("calculate", {"expression": e2, "_value": v2})])
    return _request("train", rng, kind, focus=True)


# ---------------------------------------------------------------------------------------------
# The exact mix (part 5): v4's remaining call failures. It dropped a unit the user asked for
# ("In celsius, how warm is it in X?" -> no ``unit``), called an invented ``web_weather`` when
# asked to "look up the forecast", and made two calls for one calculation. Requests with a unit
# word at the start, middle or end (lower case or capitalised), weather requests worded as
# look-ups and forecasts, and single calculations in new words, on top of the boundary mix.
# ---------------------------------------------------------------------------------------------

_EXACT_PHRASINGS = {
    "weather_unit": [
        "In {unit}, what's the weather in {city}?", "In {unit} please: how hot is it in {city}?",
        "Using {unit}, tell me the weather in {city}.", "{Unit} please. What's the temperature in {city}?",
        "Weather in {city} ({unit})?", "What's the temperature in {city}, in {unit}?",
        "How cold is it in {city} in {unit}?", "Give me the temperature of {city} in degrees {unit}.",
        "{city}: temperature in {unit}, please.", "Is it hot in {city}? Answer in {unit}.",
        "Degrees {unit}: how warm is {city} today?", "I think in {unit}. What's the weather like in {city}?",
        "Weather for {city} in {unit} degrees.", "Check the weather in {city} and give it in {unit}.",
        "Current temperature for {city} ({unit}), please.", "What's it like in {city} in {unit}?",
        "{Unit}, please: weather in {city}.", "Tell me how warm {city} is in {unit}.",
        "Temperature of {city} in {unit}?", "How many degrees {unit} is it in {city}?",
        "In degrees {unit}, what's the temperature of {city}?", "{Unit} only: is it cold in {city}?",
        "Show the weather in {city}, {unit} please.", "My thermometer uses {unit}. Weather in {city}?",
        "Look up the temperature in {city} in {unit}.", "Forecast in {unit} for {city}, please.",
        "(In {unit}) What's the weather in {city}?", "Weather {city} {unit}",
    ],
    "forecast": [
        "Look up the weather in {city}.", "Can you look up the weather for {city}?", "Please look up {city}'s forecast.",
        "Look up today's forecast in {city}, please.", "I need you to look up the temperature in {city}.",
        "Check the forecast for {city}.", "Pull up the forecast for {city}, please.",
        "What does the forecast say for {city}?", "Find the weather forecast for {city}.",
        "Forecast for {city} tomorrow?", "Get me the forecast in {city}.", "Look up whether it will rain in {city}.",
        "Can you find out the weather in {city}?", "Would you check the forecast for {city}?",
        "Look up {city} weather, please.", "What's the latest forecast for {city}?", "Show me the forecast for {city}.",
        "Please find the forecast for {city}.", "Look up the conditions in {city} for me.",
        "Could you find the weather report for {city}?", "Look up how warm it is in {city}.",
        "Weather forecast, {city}, please.", "I'd like the forecast for {city}.", "Fetch the forecast for {city}.",
    ],
    "calc": [
        "What's {expr} equal to?", "How much does {expr} make?", "Give me the result of {expr}.",
        "{expr} - what's the answer?", "Can you do {expr} for me?", "What's the answer to {expr}?",
        "Do the math: {expr}.", "Tell me what {expr} gives.", "What would {expr} be?", "Work this out: {expr}",
        "I need the result of {expr}, please.", "What does {expr} equal?", "Evaluate {expr} for me, please.",
        "Result of {expr}?", "{expr}: what's that?", "What does {expr} give?", "Calculate this: {expr}",
        "Math question: what is {expr}?", "Please compute {expr} and tell me the result.",
        "What is {expr} exactly?", "Can you calculate {expr} and show the answer?",
    ],
}


def _exact_request(rng: random.Random, kind: str | None = None) -> tuple[str, list[dict]]:
    """A request of the exact mix and its calls: a unit, forecast or single-calculation request
    in the phrasings above (three in ten), else a request of the boundary mix."""
    kind = kind or rng.choices(["weather_unit", "forecast", "calc", "boundary"], weights=[13, 8, 9, 70])[0]
    if kind == "boundary":
        return _boundary_request(rng)
    phrase = rng.choice(_EXACT_PHRASINGS[kind])
    if kind == "calc":
        e, val = _expr("train", rng)
        return phrase.format(expr=e), [_call("calculate", {"expression": e, "_value": val})]
    if rng.random() < 0.4:
        phrase = _trail(phrase, rng)
    c = _boundary_city(rng)
    if kind == "forecast":
        return phrase.format(city=c), [_call("get_weather", {"city": c})]
    u = rng.choice(["celsius", "fahrenheit"])
    shown = u.capitalize() if rng.random() < 0.3 else u
    return (phrase.format(city=c, unit=shown, Unit=u.capitalize()),
            [_call("get_weather", {"city": c, "unit": u})])


# Plain questions no tool answers and a tiny model cannot know: many subjects and forms (some
# with "in ..." or a time word, where v3 called get_weather with the phrase as the city),
# answered briefly and honestly.
_UNKNOWN_FORMS = [
    "Why do {nouns} {verb}?", "Tell me something about {nouns}.", "Who invented {nouns}?",
    "How do {nouns} work?", "Explain {nouns} briefly.", "Describe {nouns} in a few words.",
    "What's the history of {nouns}?", "Are {nouns} dangerous?", "Give me a quote about {nouns}.",
    "Write a limerick about {nouns}.", "What's the difference between {nouns} and {nouns2}?",
    "Recommend a {media} for {occasion}.", "Suggest a {media} for {occasion}, please.",
    "How do you say {phrase} in {language}?", "Translate {phrase} into {language}.",
    "Which language do people speak in {country}?", "What is the national dish of {country}?",
    "What is the population of {country}?", "What's the most famous song from {country}?",
    "Who will win the next {sport} championship?", "What will the stock market do next year?",
    "What number am I thinking of?", "What did I eat for breakfast?", "How tall is my house?",
    "What's my best friend's favourite colour?", "Can you help me plan a {event}?",
    "Can you help me pick a gift for my {relative}?", "Summarize {nouns} in two sentences.",
    "Explain {nouns} in simple terms.", "What is the best way to learn about {nouns}?",
    "Is it true that {nouns} {verb}?", "How many {nouns} are there in the world?",
    "What should I cook for {occasion}?", "Tell me a story about {nouns}.", "What's your opinion on {nouns}?",
    "How do I get better at {hobby}?", "Is {hobby} hard to learn?", "Why is {hobby} popular in {country}?",
    "What do people in {country} eat for breakfast?", "Describe {season} in a few words.",
    "What is the meaning of the word {word}?", "How do you pronounce {word}?",
]
_UNKNOWN_FILL = {
    "verb": _TOPIC_VERBS + ["exist", "matter", "break", "move", "last"],
    "media": ["book", "film", "podcast", "board game", "song", "recipe", "video game", "playlist"],
    "occasion": ["a rainy day", "the evening", "my commute", "a long flight", "a party", "a quiet Sunday",
                 "this summer", "a family dinner", "tonight", "the holidays"],
    "phrase": ["goodbye", "good luck", "see you soon", "I love you", "happy birthday", "excuse me", "cheers",
               "well done", "good evening"],
    "language": ["Italian", "Japanese", "Dutch", "Swahili", "Korean", "Greek", "Finnish", "Polish", "Hindi",
                 "Turkish", "Arabic", "Russian"],
    "sport": ["football", "tennis", "chess", "cycling", "basketball", "cricket", "hockey"],
    "event": ["party", "birthday dinner", "road trip", "study week", "wedding toast", "garden", "picnic"],
    "relative": ["mother", "father", "sister", "uncle", "grandmother", "boss", "neighbour", "cousin"],
    "hobby": ["chess", "painting", "knitting", "running", "baking", "singing", "surfing", "drawing",
              "juggling", "gardening"],
    "season": ["winter", "spring", "summer", "a snowy morning", "the seaside", "a busy market", "a thunderstorm"],
}
_UNKNOWN_ANSWERS = [
    "I'm a tiny demo model, so I can't answer that reliably.",
    "I don't know that for sure. I'm a very small model, so please check a trusted source.",
    "Sorry, I can't be sure about that one; I'm only a tiny model.",
    "That's beyond what a model my size knows well, so I won't guess.",
    "Good question! I'm too small a model to answer it well.",
    "I'm not sure. None of my tools covers that, and I'm a very small model.",
]
_GREETINGS = ["Hey", "Hi", "Hello", "Evening", "Good evening", "Good afternoon", "Howdy", "Hiya", "Hey there",
              "Hello again", "Oi", "Sup"]
_GREETING_FOLLOWS = ["Are you there?", "Is anyone here?", "Are you awake?", "Who is this?", "Who are you?",
                     "What are you?", "Can you hear me?", "Are you a bot?", "Anyone home?", "You there?"]
_GREETING_ANSWERS = ["Hello! I'm a tiny demo assistant. How can I help?", "Hi! I'm here. What can I do for you?",
                     "Hello! I'm a small chat model that can use tools. What do you need?"]


_CAPITAL_MORE = ["Tell me the capital of {country}.", "What's {country}'s capital?", "{country}: what is its capital?",
                 "I forgot the capital of {country}. What is it?", "The capital of {country} is which city?",
                 "Which city is {country}'s capital?", "Quick one: the capital of {country}?",
                 "Can you tell me the capital city of {country}?"]


def _unknown_question(rng: random.Random) -> tuple[str, str]:
    """A plain question of the boundary mix and its answer: a greeting, a capital asked in new
    ways, or a question a tiny model cannot know (never an evaluation question:
    ``plain_held_out_questions``)."""
    held_out = set(plain_held_out_questions())
    while True:
        r = rng.random()
        if r < 0.15:
            country, capital = rng.choice(_CAPITALS)
            q = rng.choice(_CAPITAL_MORE).format(country=country)
            q = q[0].upper() + q[1:]
            a = rng.choice(_CAPITAL_ANSWERS).format(country=country, capital=capital)
        elif r < 0.32:
            q = rng.choice(_GREETINGS) + rng.choice([", ", "! ", ". ", "? "]) + rng.choice(_GREETING_FOLLOWS)
            a = rng.choice(_GREETING_ANSWERS)
        else:
            fill = {k: rng.choice(v) for k, v in _UNKNOWN_FILL.items()}
            n1, n2 = rng.sample(_TOPIC_NOUNS, 2)
            fill.update(nouns=n1, nouns2=n2, country=rng.choice(_CAPITALS)[0], word=_random_word(rng))
            q = rng.choice(_UNKNOWN_FORMS).format(**fill)
            q = q[0].upper() + q[1:]
            a = rng.choice(_UNKNOWN_ANSWERS)
        if q not in held_out and not eval_names_in(q):
            return q, a


def _clean(call: dict) -> dict:
    """Drop the private ``_value`` helper from a call's arguments."""
    a = {k: v for k, v in call["function"]["arguments"].items() if not k.startswith("_")}
    return _call(call["function"]["name"], a)


def _offered_tools(needed: set[str], rng: random.Random, split: str = "eval", drill: bool = False) -> list[dict]:
    """The needed tools plus distractors, in random order.

    Evaluation offers 0-1 distractors with a call (1-3 tools that do not fit with a plain
    question); training offers 0-3 so that the model picks the tool the request names from the
    list it was given. Copy drills offer the needed tools only (short prompts).
    """
    others = [n for n in TOOLS if n not in needed]
    if drill:
        k = 0
    elif split == "train":
        k = min(len(others), rng.choice([0, 1, 1, 2, 3])) if needed else rng.randint(1, 4)
    else:
        k = rng.choice([0, 0, 1]) if needed else rng.randint(1, 3)
    names = list(needed) + rng.sample(others, k)
    rng.shuffle(names)
    return [TOOLS[n] for n in names]


def _answer(calls: list[dict], results: list[dict], rng: random.Random) -> str:
    """The answer after tool results: one sentence per result (search results as lists)."""
    sep = "\n\n" if any(c["function"]["name"] == "web_search" for c in calls) else " "
    return sep.join(_answer_for(c, r, rng) for c, r in zip(calls, results))


def _exchange(rng: random.Random) -> list[dict]:
    """A finished earlier exchange (training only): a plain question and its answer, or a
    request, its calls, the results and the answer that states them."""
    if rng.random() < 0.35:
        user, answer = _plain("train", rng)
        return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    user, calls = _request("train", rng)
    results = [_result(c, rng) for c in calls]
    return ([{"role": "user", "content": user}, {"role": "assistant", "tool_calls": [_clean(c) for c in calls]}]
            + [{"role": "tool", "content": json.dumps(r, ensure_ascii=False)} for r in results]
            + [{"role": "assistant", "content": _answer(calls, results, rng)}])


def _tools_called(messages: list[dict]) -> set[str]:
    return {c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}


def make_example(split: str, rng: random.Random, drill: bool = False, focus: bool = False,
                 boundary: bool = False, exact: bool = False) -> dict:
    """One training/evaluation example.

    Returns a dict with ``messages`` (the conversation before the assistant turn), ``tools``
    (offered tools or None), ``thinking`` (bool), ``kind`` (``"call"``, ``"answer"`` or
    ``"plain"``) and ``target`` (the assistant message to produce); ``"call"`` examples add
    ``expected_calls``, ``"answer"`` examples add ``expected_values`` (the strings the answer
    must state, from ``stated_values``).

    Training conversations start, two times in five, with one or two finished exchanges
    (``_exchange``); ``train.py`` learns their assistant turns too. ``drill`` (training only)
    makes a call drill: a tool call or an answer from tool results, with made-up values, only
    the needed tools offered and no system prompt, so that copying is most of what the short
    example teaches.

    ``focus`` (training only) weights the mix toward what the v2 model got wrong: more answers
    after tool results and plain questions, more two-call requests, and half of the city names
    and made-up search words spliced from pieces of training words (``_spliced_word``).

    ``boundary`` (training only) is the mix aimed at what v3 got wrong (``_boundary_request``,
    ``_unknown_question``): values followed by other words, long names, two calls of mixed
    tools, exchange rates in many phrasings, and plain questions the model cannot know,
    answered briefly and honestly (six of the eight plain questions; the rest as before).

    ``exact`` (training only) is the mix aimed at v4's remaining call failures
    (``_exact_request``): three in ten requests ask for a unit, a looked-up forecast or a single
    calculation in new words, the rest are the boundary mix's; a little more calls (7 of 13
    conversations) and the boundary mix's plain questions.
    """
    thinking = rng.random() < 0.5
    system = None if drill else rng.choice(_SYSTEMS)
    messages: list[dict] = [{"role": "system", "content": system}] if system else []
    if split == "train" and not drill and rng.random() < 0.4:
        for _ in range(rng.choice([1, 1, 2])):
            messages += _exchange(rng)
    earlier = _tools_called(messages)
    if exact:
        weights = [3, 2, 0] if drill else [7, 3, 3]
    elif boundary:
        weights = [3, 2, 0] if drill else [6, 3, 4]
    elif focus:
        weights = [2, 3, 0] if drill else [5, 4, 4]
    else:
        weights = [3, 2, 0] if drill else ([6, 3, 3] if split == "train" else [5, 4, 3])
    kind = rng.choices(["call", "answer", "plain"], weights=weights)[0]
    if kind == "plain":
        user, answer = _unknown_question(rng) if (boundary or exact) and rng.random() < 0.75 else _plain(split, rng)
        tools = _offered_tools(earlier, rng, split) if earlier or rng.random() < 0.75 else None
        messages.append({"role": "user", "content": user})
        target = {"role": "assistant", "content": answer}
        if thinking:
            target["reasoning_content"] = rng.choice([
                "None of the tools fits this question, so I answer it directly.",
                f"The user asks \"{user}\" No tool is needed for that. I will reply briefly.",
                "This is a general question. I answer from what I know, without a tool call.",
            ] if tools else [
                "The user is just chatting. No tool is needed, I can answer directly.",
                f"The message is \"{user}\" I can reply directly.",
                "Nothing to look up here, so I answer briefly.",
            ])
        return {"messages": messages, "tools": tools, "thinking": thinking, "kind": kind, "target": target}

    user, calls = _request(split, rng, focus=focus, boundary=boundary, exact=exact)
    tools = _offered_tools({c["function"]["name"] for c in calls} | earlier, rng, split, drill)
    messages.append({"role": "user", "content": user})
    clean = [_clean(c) for c in calls]
    if kind == "call":
        target = {"role": "assistant", "tool_calls": clean}
        if thinking:
            plan = " and ".join(_describe(c) for c in clean)
            target["reasoning_content"] = rng.choice([
                f"The user asks: {user} I should call {plan}.",
                f"I need a tool for this. I will call {plan}.",
                f"To answer I call {plan}.",
            ])
        return {"messages": messages, "tools": tools, "thinking": thinking, "kind": kind,
                "target": target, "expected_calls": clean}

    # "answer": the calls were made, results came back, now answer from them
    first = {"role": "assistant", "tool_calls": clean}
    if thinking and rng.random() < 0.5:  # reasoning of the earlier turn is kept in history
        first["reasoning_content"] = "I will call " + " and ".join(_describe(c) for c in clean) + "."
    messages.append(first)
    results = [_result(c, rng) for c in calls]
    for r in results:
        messages.append({"role": "tool", "content": json.dumps(r, ensure_ascii=False)})
    target = {"role": "assistant", "content": _answer(calls, results, rng)}
    if thinking:
        target["reasoning_content"] = rng.choice([
            "The tool results are in. I will summarize them for the user.",
            "I have the results now, so I can answer.",
            f"The tool returned {json.dumps(results[0], ensure_ascii=False)}. I report it.",
        ])
    return {"messages": messages, "tools": tools, "thinking": thinking, "kind": kind, "target": target,
            "expected_values": [v for c, r in zip(calls, results) for v in stated_values(c, r)]}


def make_examples(n: int, split: str, seed: int, drill: bool = False, focus: bool = False,
                  boundary: bool = False, exact: bool = False) -> list[dict]:
    """``n`` examples of one split, reproducible from ``seed`` (``drill``: call drills,
    ``focus``, ``boundary``, ``exact``: those mixes, see ``make_example``)."""
    rng = random.Random(f"{split}:{seed}" + (":drill" if drill else "") + (":focus" if focus else "")
                        + (":boundary" if boundary else "") + (":exact" if exact else ""))
    return [make_example(split, rng, drill, focus, boundary, exact) for _ in range(n)]


_ECHO = [  # (request, answer) forms of the copy drills; {x} and {y} are made-up values
    ("Repeat after me: {x}", "{x}"), ("Say \"{x}\".", "{x}"), ("Echo: {x}", "{x}"),
    ("Please write {x} back to me.", "{x}"), ("Copy this exactly: {x}", "{x}"),
    ("{x} - repeat that, please.", "{x}"), ("My name is {x}. What is my name?", "Your name is {x}."),
    ("Remember this code: {x}. What is the code?", "The code is {x}."),
    ("I live in {x}. Where do I live?", "You live in {x}."),
    ("First {x}, then {y}. What came second?", "{y}"), ("First {x}, then {y}. What came first?", "{x}"),
    ("The password is {x} and the user is {y}. Who is the user?", "The user is {y}."),
]
_ECHO_FOCUS = _ECHO + [  # three values: keep one's place among several made of common pieces
    ("First {x}, then {y}, then {z}. What came second?", "{y}"),
    ("First {x}, then {y}, then {z}. What came last?", "{z}"),
    ("Cities: {x}, {y} and {z}. Repeat them.", "{x}, {y} and {z}"),
    ("Write back {x} and {y}.", "{x} and {y}"),
    ("I fly from {x} to {y} via {z}. Where do I change planes?", "You change planes in {z}."),
]


def _echo_value(rng: random.Random, focus: bool = False) -> str:
    """One to four made-up words, letter strings, numbers or codes (``"Vorka 2981 qxe"``;
    ``focus``: half of the words spliced from pieces of training words)."""
    def make(r: random.Random) -> str:
        parts = []
        for _ in range(r.choice([1, 1, 2, 2, 3, 4])):
            x = r.random()
            if x < 0.5:
                w = _spliced_word(r) if focus and r.random() < 0.5 else _random_word(r)
                parts.append(w.capitalize() if r.random() < 0.5 else w)
            elif x < 0.65:
                parts.append(str(r.randint(0, 99999)))
            elif x < 0.8:
                parts.append("".join(r.choice(_LETTERS.upper()) for _ in range(r.randint(2, 4))))
            else:
                parts.append(r.choice(_TOPIC_NOUNS))
        return " ".join(parts)

    return _made_up(make, rng)


def make_echo_example(rng: random.Random, focus: bool = False) -> dict:
    """A copy drill without tools: the user gives made-up values and asks for one back.

    Short (about 40 tokens) and mostly copying: the first training phase uses these so that
    the model learns to copy (induction) before it learns the conversations.
    """
    request, answer = rng.choice(_ECHO_FOCUS if focus else _ECHO)
    x, y = _echo_value(rng, focus), _echo_value(rng, focus)
    while y == x:
        y = _echo_value(rng, focus)
    z = ""
    if "{z}" in request:
        z = _echo_value(rng, focus)
        while z in (x, y):
            z = _echo_value(rng, focus)
    thinking = rng.random() < 0.2
    target = {"role": "assistant", "content": answer.format(x=x, y=y, z=z)}
    if thinking:
        target["reasoning_content"] = f"The answer is {answer.format(x=x, y=y, z=z)}"
    return {"messages": [{"role": "user", "content": request.format(x=x, y=y, z=z)}], "tools": None,
            "thinking": thinking, "kind": "plain", "target": target}


def make_echo_examples(n: int, seed: int, focus: bool = False, boundary: bool = False,
                       exact: bool = False) -> list[dict]:
    """``n`` copy drills (``make_echo_example``), reproducible from ``seed`` (``boundary``,
    ``exact``: a stream of its own)."""
    rng = random.Random(f"echo:{seed}" + (":focus" if focus else "") + (":boundary" if boundary else "")
                        + (":exact" if exact else ""))
    return [make_echo_example(rng, focus) for _ in range(n)]


PHASES = ("copy", "main", "focus", "boundary", "exact")  # the example streams of training_block


def training_block(phase: str, seed: int, number: int, size: int, drill_share: float = 0.0,
                   echo_share: float = 0.0) -> list[dict]:
    """Block ``number`` of a training run's example stream (what ``train.py`` draws).

    ``phase`` ``"copy"``: ``size`` copy drills; ``"main"``: conversations with a ``drill_share``
    of call drills and an ``echo_share`` of copy drills; ``"focus"``, ``"boundary"`` and ``"exact"``:
    the same shares of that mix (``make_example``; the boundary and exact mixes' copy drills are the
    focus mix's), each a separate stream. Drawn from ``seed * 100_003 + number``.
    """
    block_seed = seed * 100_003 + number
    if phase == "copy":
        return make_echo_examples(size, block_seed)
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}")
    focus, boundary, exact = phase == "focus", phase == "boundary", phase == "exact"
    n_drill, n_echo = int(size * drill_share), int(size * echo_share)
    return (make_examples(size - n_drill - n_echo, "train", block_seed, focus=focus, boundary=boundary, exact=exact)
            + make_examples(n_drill, "train", block_seed, drill=True, focus=focus, boundary=boundary, exact=exact)
            + make_echo_examples(n_echo, block_seed + 7, focus or boundary or exact, boundary, exact))


def user_messages(examples: list[dict]) -> list[str]:
    """Every user message of ``examples`` (tool results excluded)."""
    return [m["content"] for ex in examples for m in ex["messages"] if m["role"] == "user"]


def phrasing_pattern(phrasing: str) -> re.Pattern:
    """A regex that matches any message built from ``phrasing`` (placeholders: any text), with
    anything before or after it (fillers)."""
    parts = re.split(r"\{[a-z0-9]+\}", phrasing)
    return re.compile("^(?:.*?)" + ".+?".join(re.escape(p) for p in parts) + "(?:.*)$", re.S)


def overlap_with_training(eval_examples: list[dict], train_examples) -> dict:
    """How much of an evaluation set training has seen; every count should be 0.

    ``train_examples`` is any iterable of training examples (a list, or a generator over a
    run's blocks). Returns ``{"user_messages": n, "held_out_phrasings": n, "eval_names": n,
    "plain_questions": n, "training_examples": n}``: evaluation user messages that occur verbatim
    in training; training user messages that match a held-out phrasing; evaluation cities or
    currency codes anywhere in the training text; held-out plain questions that training can
    ask; and how many training examples were checked.
    """
    patterns = [phrasing_pattern(p) for p in held_out_phrasings()]
    train_users: set[str] = set()
    names = n = 0
    for ex in train_examples:
        n += 1
        train_users.update(user_messages([ex]))
        names += len(eval_names_in(json.dumps(ex, ensure_ascii=False)))
    plain_train = set(plain_training_questions())
    return {
        "user_messages": sum(1 for u in user_messages(eval_examples) if u in train_users),
        "held_out_phrasings": sum(1 for u in train_users if any(rx.match(u) for rx in patterns)),
        "eval_names": names,
        "plain_questions": sum(1 for q in plain_held_out_questions() if q in plain_train or q in train_users),
        "training_examples": n,
    }